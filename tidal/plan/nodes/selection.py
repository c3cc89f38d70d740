"""Where, Select, SelectMany and Multicast: per-event payload operators (``tidal.ops.selection``)."""

from __future__ import annotations

import pyarrow as pa

from ...expr.compile import CompiledLambda, projection_schema
from ...expr.sqlcompile import CompiledSql
from ...ops.base import Operator, PassThrough
from ...ops.named_select import NamedSelectOp
from ...ops.selection import SelectManyOp, SelectOp, WhereOp
from ..node import PlanNode


class Where(PlanNode):
    label = "Where"

    def __init__(self, input: PlanNode, predicate):
        super().__init__((input,), input.schema, input.props, predicate=predicate)
        self.probe  # noqa: B018  (compiling now checks the fields the predicate reads)

    def make(self) -> Operator:
        return WhereOp(CompiledLambda(self.predicate, self.schema, truth=True))


class Select(PlanNode):
    """``select(lambda e: {...})``: one lambda returning the new payload."""

    label = "Select"

    def __init__(self, input: PlanNode, fn):
        in_schema = input.schema
        op = SelectOp(CompiledLambda(fn, in_schema, truth=False))
        schema = projection_schema(op.projection, in_schema)
        # a lambda may rewrite the sorted fields
        super().__init__((input,), schema, input.props.but(sorted_by=()), fn=fn, in_schema=in_schema)
        self.__dict__["probe"] = op  # built first: it gives the output fields

    def make(self) -> Operator:
        return SelectOp(CompiledLambda(self.fn, self.in_schema, truth=False))


class NamedSelect(PlanNode):
    """``select(name=lambda e: ..., other="field")``: each output field a field name or a one-value lambda."""

    label = "Select"

    def __init__(self, input: PlanNode, parts: dict):
        in_schema = input.schema
        op = NamedSelectOp(parts, in_schema)
        fields = []
        for name, part in parts.items():
            if isinstance(part, str):
                t = None if in_schema is None else in_schema.field(part).type
            else:
                s = projection_schema(op.parts[name], in_schema)
                t = None if s is None else s.field(0).type
            if t is None:
                fields = None
                break
            fields.append(pa.field(name, t))
        props = input.props.but(sorted_by=_renamed_sort(input.props.sorted_by, parts))
        schema = pa.schema(fields) if fields is not None else None
        super().__init__((input,), schema, props, parts=dict(parts), in_schema=in_schema)
        self.__dict__["probe"] = op  # built first: it gives the output fields

    def make(self) -> Operator:
        return NamedSelectOp(self.parts, self.in_schema)


class _SqlExpression(PlanNode):
    """A node evaluating a SQL expression per row: ``expr`` is it translated into an expression tree
    (``.node``, ``.texts``, ``.sql``); ``rows`` the schema it reads; ``rewrite`` puts error messages in
    the user's terms."""

    def __init__(self, input: PlanNode, expr, rows: pa.Schema | None, subresults: dict, rewrite):
        super().__init__((input,), input.schema, input.props, expr=expr, rows=rows, subresults=subresults,
                         rewrite=rewrite)  # fmt: skip

    def compiled(self, truth: bool) -> CompiledSql:
        e = self.expr
        return CompiledSql(
            e.node, e.texts, truth=truth, schema=self.rows, subresults=self.subresults, rewrite=self.rewrite, text=e.sql
        )


class SqlFilter(_SqlExpression):
    """SQL WHERE/HAVING: the rows whose condition is true (false and NULL drop the row)."""

    label = "SqlFilter"

    def make(self) -> Operator:
        return WhereOp(self.compiled(truth=True))


class SqlProject(_SqlExpression):
    """SQL SELECT list: each row replaced by the values of its expressions (``expr`` is one record)."""

    label = "SqlProject"

    def make(self) -> Operator:
        return SelectOp(self.compiled(truth=False))


class SelectMany(PlanNode):
    label = "SelectMany"

    def __init__(self, input: PlanNode, fn):
        # the payload fields are whatever fn returns: known at run time
        super().__init__((input,), None, input.props.but(sorted_by=()), fn=fn, in_schema=input.schema)

    def make(self) -> Operator:
        return SelectManyOp(CompiledLambda(self.fn, self.in_schema, truth=False))


class Multicast(PlanNode):
    """One stream shared by several consumers (its operator is built once)."""

    label = "Multicast"

    def __init__(self, input: PlanNode):
        super().__init__((input,), input.schema, input.props)

    def make(self) -> Operator:
        return PassThrough()


def _renamed_sort(sorted_by: tuple[str, ...], named: dict) -> tuple[str, ...]:
    """The sort order after a projection: the longest prefix of the sorted fields passed through (maybe renamed)."""
    out = []
    for field in sorted_by:
        new = next((k for k, v in named.items() if isinstance(v, str) and v == field), None)
        if new is None:
            break
        out.append(new)
    return tuple(out)


class WhereSelect(PlanNode):
    """A where whose only consumer is a plain select: one compiled pass filters and computes the
    select's fields for the kept rows only (``tidal.ops.selection``)."""

    label = "Where+Select"

    def __init__(self, where: Where | SqlFilter, select: Select | SqlProject):
        super().__init__(where.inputs, select.schema, select.props, where=where, select=select)

    def make(self) -> Operator:
        where, select = self.where.make(), self.select.make()
        where.downstream.append(select)
        where.fuse(select)
        select.ports = [where]  # the input enters at the where; consumers hang off the select
        return select

    def describe(self) -> str:
        return f"where: {self.where.describe()}; select: {self.select.describe()}"

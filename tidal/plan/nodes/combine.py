"""Two-input nodes: the temporal union and the join family (``tidal.ops.union``, ``tidal.ops.join``)."""

from __future__ import annotations

import pyarrow as pa

from ...core.errors import PlanError
from ...ops.base import Operator
from ...ops.join import JoinOp, key_spec, output_names, result_types
from ...ops.union import UnionOp
from ..node import PlanNode
from ..properties import Properties


class Union(PlanNode):
    label = "Union"

    def __init__(self, left: PlanNode, right: PlanNode):
        a, b = left.schema, right.schema
        if a is not None and b is not None and not a.equals(b):
            raise PlanError(f"union needs the same payload fields and types on both sides: {a} vs {b}")
        lp, rp = left.props, right.props
        props = Properties(
            constant_duration=lp.constant_duration if lp.constant_duration == rp.constant_duration else None,
            constant_hop=lp.constant_hop if lp.constant_hop == rp.constant_hop else None,
            start_edge_only=lp.start_edge_only and rp.start_edge_only,
            grouping=lp.grouping if lp.grouping == rp.grouping else (),
        )
        super().__init__((left, right), a if a is not None else b, props)

    def make(self) -> Operator:
        return UnionOp()


_LABELS = {
    "inner": "Join",
    "left_outer": "LeftOuterJoin",
    "full_outer": "FullOuterJoin",
    "exists": "WhereExists",
    "not_exists": "WhereNotExists",
    "clip": "Clip",
}


def _key_kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t):
        return "floating-point"
    return "text" if pa.types.is_string(t) or pa.types.is_large_string(t) else str(t)


def _check_key_types(left_fields, right_fields, ls: pa.Schema, rs: pa.Schema) -> None:
    """Key fields of different kinds (an integer against a real: which side's type wins, and integers
    past 2**53 as reals, would decide the answer) are refused by name rather than compared."""
    for lf, rf in zip(left_fields, right_fields, strict=True):
        if lf not in ls.names or rf not in rs.names:
            continue  # the operator names a missing field
        lt, rt = ls.field(lf).type, rs.field(rf).type
        if _key_kind(lt) != _key_kind(rt):
            raise PlanError(
                f"join keys {lf!r} ({lt}) and {rf!r} ({rt}) are of different kinds: not supported; "
                "cast one side first (e.g. select(lambda e: {..., 'k': float(e.k)}))"
            )


class Join(PlanNode):
    """At every instant, the key-equal pairs of alive events (or, by ``mode``: outer rows, semi-,
    anti-join, clip); ``tidal.ops.join`` states the semantics and picks the physical variant."""

    def __init__(self, left: PlanNode, right: PlanNode, mode: str, left_key, right_key, result=None,
                 build_once: bool = False, variant: str | None = None):  # fmt: skip
        ls, rs = left.schema, right.schema
        lp, rp = left.props, right.props
        probe = JoinOp(mode, left_key, right_key, ls, rs, lp, rp, result, build_once, variant)  # validates keys now
        lk, rk = key_spec(left_key), key_spec(right_key)
        if (lk[0] == "none") != (rk[0] == "none"):
            raise PlanError("give both join keys or neither (a cross join)")
        if lk[0] == "fields" and rk[0] == "fields" and len(lk[1]) != len(rk[1]):
            raise PlanError(f"join keys have different numbers of fields: {list(lk[1])} vs {list(rk[1])}")
        if lk[0] == "fields" and rk[0] == "fields" and ls is not None and rs is not None:
            _check_key_types(lk[1], rk[1], ls, rs)
        if mode in ("exists", "not_exists", "clip"):
            schema = ls
        elif result is not None:
            types = result_types(result, ls, rs)
            schema = None if types is None else pa.schema(list(types.items()))
        elif ls is None or rs is None:
            schema = None
        else:
            names = output_names(ls.names, rs.names)
            schema = pa.schema([pa.field(n, f.type) for n, f in zip(names, list(ls) + list(rs), strict=True)])
        both_start = lp.start_edge_only and rp.start_edge_only
        seo = {"inner": both_start, "exists": both_start}.get(mode, False)
        super().__init__(
            (left, right),
            schema,
            Properties(start_edge_only=seo, grouping=lp.grouping),
            mode=mode,
            left_key=left_key,
            right_key=right_key,
            result=result,
            build_once=build_once,
            variant=variant,
            sides=(ls, rs, lp, rp),
            cross=lk[0] == "none",
        )
        # a distributed backend must bring equal keys together; lambda keys name no field,
        # so they (and a cross join) need each input whole in one partition
        lfields = lk[1] if lk[0] == "fields" else ()
        rfields = rk[1] if rk[0] == "fields" else ()
        if not lfields or not rfields:
            lfields = rfields = ()
        self._set(partitioning=(tuple(lfields), tuple(rfields)))
        self.__dict__["probe"] = probe

    @property
    def label(self) -> str:
        return "CrossJoin" if self.mode == "inner" and self.cross else _LABELS[self.mode]

    def make(self) -> Operator:
        ls, rs, lp, rp = self.sides
        return JoinOp(
            self.mode, self.left_key, self.right_key, ls, rs, lp, rp, self.result, self.build_once, self.variant
        )

"""Output payloads of the join family: default field names, and the ``result`` lambda, translated to one
expression over both sides' columns where the lambda compiler can, otherwise run per output row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch
from ...core.errors import PlanError
from ...expr.compile import describe_columnar, records_to_columns, row_class, rows_of
from ...expr.kernels import Evaluator, Fallback, Unsupported, record_fields, to_arrow_column
from ...expr.lambdas import Opaque, translate_rows
from ...expr.nodes import Col

_LEFT, _RIGHT = "left.", "right."  # column prefixes of the two rows in a compiled result lambda


class _NullRow:
    """Stands for the missing side of an outer join in a ``result`` lambda: every field is None."""

    def __getattr__(self, name):
        return None

    def __getitem__(self, name):
        return None


def output_names(left: list[str], right: list[str]) -> list[str]:
    """Default result fields: the left's, then the right's (a clashing name gets ``_right``)."""
    taken = set(left)
    out = list(left)
    for name in right:
        new = name
        while new in taken:
            new = new + "_right"
        taken.add(new)
        out.append(new)
    return out


class _Result:
    """An output's payload from the columns of its two rows (``missing``: the side an outer join pads with
    nulls): the default fields, or the ``result`` lambda's."""

    def __init__(self, result, schemas):
        self.fn = result
        self.node = None  # the lambda as one columnar expression, while it translates
        self.reason = ""  # why it does not
        self.fields: tuple[list[str], list[str]] | None = None  # the fields each side's store must give
        if result is not None:
            self._compile(result, schemas)
        self.types: dict[str, pa.DataType] = dict(result_types(result, *schemas) or {})

    def describe(self) -> str:
        return describe_columnar(self.node) if self.node is not None else f"row mode ({self.reason})"

    def _compile(self, result, schemas) -> None:
        """Translate ``result(l, r)`` to an expression over both sides' columns, so outputs are built columnar."""
        try:
            node = translate_rows(result, [_LEFT, _RIGHT])
        except Opaque as exc:
            self.reason = str(exc)
            return
        if all(s is not None for s in schemas):
            empty = {
                p + f.name: pa.array([], f.type) for p, sc in zip((_LEFT, _RIGHT), schemas, strict=True) for f in sc
            }
            missing = node.columns() - set(empty)
            if missing:
                names = sorted(c.split(".", 1)[1] for c in missing)
                raise PlanError(f"the join's result lambda uses field(s) {names} its inputs do not have")
            try:
                ev = Evaluator(empty, 0)
                for _, part in record_fields(node):
                    ev.eval(part)
            except Unsupported as exc:
                self.reason = str(exc)
                return
            except Fallback:
                pass
        self.node = node
        used = node.columns()
        self.fields = tuple(
            [c[len(p) :] for c in sorted(used) if c.startswith(p)] for p in (_LEFT, _RIGHT)
        )  # fmt: skip

    def columns(self, lcols: dict, rcols: dict, n: int, missing: int | None = None) -> dict[str, pa.Array]:
        if self.fn is None:
            names = output_names(list(lcols), list(rcols))
            return dict(zip(names, list(lcols.values()) + list(rcols.values()), strict=True))
        cols = self._columnar(lcols, rcols, n)
        if cols is not None:
            return cols
        zeros = np.zeros(n, np.int64)
        lrows = [_NullRow()] * n if missing == 0 else rows_of(EventBatch(zeros, zeros, lcols))
        rrows = [_NullRow()] * n if missing == 1 else rows_of(EventBatch(zeros, zeros, rcols))
        fn = self.fn
        cols = records_to_columns([fn(a, b) for a, b in zip(lrows, rrows, strict=True)], self.types or None)
        for name, col in cols.items():  # later batches keep the types the first informative one had
            if not pa.types.is_null(col.type):
                self.types.setdefault(name, col.type)
        return cols

    def _columnar(self, lcols: dict, rcols: dict, n: int) -> dict[str, pa.Array] | None:
        """The result lambda over whole columns; None when this batch needs it row by row (nulls, say)."""
        node = self.node
        if node is None:
            return None
        inputs = {_LEFT + k: v for k, v in lcols.items()} | {_RIGHT + k: v for k, v in rcols.items()}
        if not node.columns() <= set(inputs):
            return None  # a missing side whose fields are not known yet
        try:
            ev = Evaluator(inputs, n)
            out = {}
            for name, part in record_fields(node):
                col = inputs[part.name] if isinstance(part, Col) else to_arrow_column(ev.eval(part), n)
                want = self.types.get(name)
                if want is not None and col.type != want:
                    col = col.cast(want)
                out[name] = col
        except Fallback:
            return None
        except Unsupported as exc:
            self.node, self.reason = None, str(exc)
            return None
        for name, col in out.items():
            if not pa.types.is_null(col.type):
                self.types.setdefault(name, col.type)
        return out


def _probe_value(t: pa.DataType):
    if pa.types.is_integer(t):
        return 1
    if pa.types.is_floating(t):
        return 1.0
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "a"
    return None


def result_types(result, left: pa.Schema | None, right: pa.Schema | None) -> dict[str, pa.DataType] | None:
    """Output field types of a ``result`` lambda, found by calling it once on made-up rows.

    None when the schemas are unknown, the lambda fails on the probe, or a field's type cannot
    be told (a None value): the operator then learns the types from the data.
    """
    if result is None or left is None or right is None:
        return None
    lrow = row_class(tuple(left.names))._make([_probe_value(f.type) for f in left])
    rrow = row_class(tuple(right.names))._make([_probe_value(f.type) for f in right])
    try:
        value = result(lrow, rrow)
        cols = records_to_columns([value])
    except Exception:
        return None
    if any(pa.types.is_null(c.type) for c in cols.values()):
        return None
    return {k: c.type for k, c in cols.items()}


def null_row(names) -> object:
    """A row of Nones with the given field names (the missing side in a reference outer join)."""
    return row_class(tuple(names))._make([None] * len(names))

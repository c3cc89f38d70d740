"""Detect: row pattern matching per group (``tidal.ops.pattern``)."""

from __future__ import annotations

import pyarrow as pa

from ...core.errors import PlanError
from ...ops.base import Operator
from ...ops.pattern.conditions import lambda_condition, measure_type, parse_measure
from ...ops.pattern.detect import DetectOp, skip_mode
from ...ops.pattern.syntax import compile_pattern, parse_pattern, to_text, variables
from ..node import PlanNode


class Detect(PlanNode):
    """``detect(pattern, define, measures, within, skip)``: one point event per match, at its last event.

    ``define`` maps a variable to a lambda (``lambda e: ...`` over the row, or ``lambda e, A: ...``
    also reading the last row mapped to ``A``) or to a prepared condition (SQL's DEFINE); ``measures``
    maps output fields to ``"first(A.f)"``-like strings."""

    label = "Detect"

    def __init__(self, input: PlanNode, pattern, define=None, measures=None, within=None, skip="past_last_row",
                 lifetime: str = "point"):  # fmt: skip
        if input.schema is None:
            raise PlanError("detect needs a stream whose fields are known; select the fields first")
        tree = parse_pattern(pattern)
        names = variables(tree)
        define = dict(define or {})
        unknown = [v for v in define if v not in names]
        if unknown:
            raise PlanError(f"DEFINE names {unknown}, which the pattern {to_text(tree)} does not use")
        schema = input.schema
        parsed = {name: parse_measure(name, spec, names, schema) for name, spec in dict(measures or {}).items()}
        if not parsed:
            raise PlanError("detect needs at least one measure, e.g. measures={'start': 'first(A.t)'}")
        types = [measure_type(m, schema) for m in parsed.values()]
        out = (
            None
            if any(t is None for t in types)
            else pa.schema([pa.field(n, t) for n, t in zip(parsed, types, strict=True)])
        )
        if within is not None and (not isinstance(within, int) or isinstance(within, bool) or within <= 0):
            raise PlanError(f"within must be a positive number of ticks, got {within!r}")
        mode, var = skip_mode(skip)
        if var is not None and var not in names:
            raise PlanError(f"skip {mode} {var}: {var} is not a pattern variable ({', '.join(names)})")
        if lifetime not in ("point", "start_edge"):
            raise PlanError(f"detect's lifetime is 'point' or 'start_edge', got {lifetime!r}")
        point = lifetime == "point"
        props = input.props.but(constant_duration=1 if point else None, constant_hop=None,
                                start_edge_only=not point, sorted_by=())  # fmt: skip
        super().__init__((input,), out, props, partitioning=(input.props.grouping,), tree=tree, names=names,
                         define=define, measures=parsed, within=within, skip=skip, in_schema=schema,
                         lifetime=lifetime)  # fmt: skip
        self.probe  # noqa: B018  (compiles the conditions now: unknown fields are reported here)

    def make(self) -> Operator:
        conds = {}
        for var, spec in self.define.items():
            conds[var] = spec.condition() if hasattr(spec, "condition") else lambda_condition(
                spec, var, self.names, self.in_schema)  # fmt: skip
        program = compile_pattern(self.tree, self.names)
        return DetectOp(program, conds, self.measures, self.in_schema.names, self.schema, self.within, self.skip,
                        to_text(self.tree), self.lifetime)  # fmt: skip

"""Choosing the physical join: a logical :class:`~.base.JoinSpec` picks one variant, once, from its mode,
arguments and the inputs' stream properties (as Trill's logical operators pick a physical one)."""

from __future__ import annotations

from ...core.errors import PlanError
from .base import JoinBase, JoinSpec
from .build_once import BuildOnceJoin
from .hash import ALGORITHMS, HashJoin
from .merge import MergeJoin, choose_merge
from .window import WindowJoin, window_duration


def physical_join(spec: JoinSpec) -> type[JoinBase]:
    """The variant: merge when forced or both inputs are key-sorted; build-once when asked; the window join
    when the left holds intervals of one length and the right points; otherwise the symmetric hash join."""
    if choose_merge(spec):
        return MergeJoin
    if spec.build_once:
        return BuildOnceJoin
    if window_duration(spec) is not None:
        return WindowJoin
    if spec.mode not in ALGORITHMS:
        raise PlanError(f"unknown join mode {spec.mode!r}")
    return HashJoin


def JoinOp(  # named as the class it replaced, which callers still construct
    mode: str,
    left_key,
    right_key,
    left_schema=None,
    right_schema=None,
    left_props=None,
    right_props=None,
    result=None,
    build_once: bool = False,
    variant: str | None = None,
) -> JoinBase:
    """The operator for one member of the family: ``mode`` is one of ``inner``, ``left_outer``,
    ``full_outer``, ``exists``, ``not_exists``, ``clip``; ``left_key``/``right_key`` of None make a cross
    join; ``variant`` ``"hash"`` or ``"merge"`` forces that choice."""
    spec = JoinSpec(
        mode, left_key, right_key, (left_schema, right_schema), (left_props, right_props), result, build_once, variant
    )
    return physical_join(spec)(spec)

"""Testing support: a reference evaluator of snapshot semantics and result comparison."""

from .reference import (
    Reference,
    assert_same_snapshots,
    canonical,
    intervals_of,
)

__all__ = ["Reference", "assert_same_snapshots", "canonical", "intervals_of"]

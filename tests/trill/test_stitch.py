"""Trill's Stitch tests, re-expressed for tidal's ``stitch``.

Inputs and expected results from Trill's test Sources/Test/SimpleTesting/Streamables/StitchTest.cs,
MIT licence (Copyright (c) Microsoft Corporation). The ``...Codegen`` variants repeat each test with a
``StructTuple<string, int>`` payload, two fields here (``("A", 3)``).

Which Trill tests are ported here, and which are not and why: tests/trill/README.md.

Differs on purpose: StitchTestMultisetMultiStart's input holds the end edge ``End(6, 5, "A")``
although no ``"A"`` starts at 5 (five ends for four starts: the multiplicity of ``"A"`` would go
to -1 at 7). Trill splices it silently (its comment: "6->5->1"); tidal refuses input whose end
edges have no start edge (an ``InputError``), since any answer would be a guess. The test keeps
Trill's input and checks the error.

Stitch changes no snapshot, so beside Trill's expected output the reference here is the input
itself (and ``Reference.stitch``, the coalesced layers).
"""

from __future__ import annotations

import pytest

from tidal.core.errors import InputError
from trill.events import BATCH_SIZES, check, end, point, punct, reference, start, stream

A = "A"
CASES = {  # name: (input, Trill's expected output)
    "multiset_multi_start": (  # malformed: see the module docstring
        [start(1, A), start(2, A), end(3, 2, A), start(3, A), end(4, 3, A), start(4, A), end(5, 1, A),
         end(6, 5, A), end(7, 4, A)],
        [start(1, A), start(2, A), end(6, 1, A), end(7, 2, A), punct()],
    ),
    "passthrough": (
        [start(1, A), start(2, "B"), end(3, 1, A), end(4, 2, "B")],
        [start(1, A), start(2, "B"), end(3, 1, A), end(4, 2, "B"), punct()],
    ),
    "simple_splice": (
        [start(1, A), end(2, 1, A), start(2, A), end(3, 2, A), start(3, A), end(4, 3, A), start(4, A), end(5, 4, A)],
        [start(1, A), end(5, 1, A), punct()],
    ),
    "multiset_one_start": (
        [start(1, A), start(1, A), end(2, 1, A), start(2, A), end(3, 2, A), start(3, A), end(4, 3, A), start(4, A),
         end(5, 4, A), end(6, 1, A)],
        [start(1, A), start(1, A), end(5, 1, A), end(6, 1, A), punct()],
    ),
    "multiset_extra_slow_start": (
        [start(1, A), start(1, A), start(1, A), end(2, 1, A), end(2, 1, A), start(2, A), start(2, A), end(3, 2, A),
         end(3, 2, A), start(3, A), start(3, A), end(4, 3, A), end(4, 3, A), start(4, A), start(4, A), end(5, 4, A),
         end(5, 4, A), end(6, 1, A)],
        [start(1, A), start(1, A), start(1, A), end(5, 1, A), end(5, 1, A), end(6, 1, A), punct()],
    ),
    "time_invert": (
        [start(1, A), end(2, 1, A), start(2, A), start(3, A), end(3, 2, A), start(4, A), end(4, 3, A), end(5, 4, A)],
        [start(1, A), end(5, 1, A), punct()],
    ),
    "points": ([point(100, 1), point(102, 1)], [start(100, 1), end(101, 100, 1), start(102, 1), end(103, 102, 1)]),
    "edges": (
        [start(104, 1), start(105, 2), end(106, 104, 1), end(106, 105, 2)],
        [start(104, 1), start(105, 2), end(106, 104, 1), end(106, 105, 2), punct()],
    ),
}  # fmt: skip


def _pair(events):
    return [(k, a, b, (p, 3)) if k != "punct" else (k, a, b, p) for k, a, b, p in events]


@pytest.mark.parametrize("batch", BATCH_SIZES)
@pytest.mark.parametrize("codegen", [False, True], ids=["row", "struct"])
@pytest.mark.parametrize("case", sorted(c for c in CASES if c != "multiset_multi_start"))
def test_stitch(case, codegen, batch):
    events, expected = CASES[case]
    names = ("v",)
    if codegen and case not in ("points", "edges"):
        events, expected, names = _pair(events), _pair(expected), ("v", "n")
    got = stream(events, names, batch_size=batch, clean=False).stitch()
    check(got, expected, reference(events, names).stitch())
    check(got, events)  # stitching changes no snapshot


@pytest.mark.parametrize("codegen", [False, True], ids=["row", "struct"])
def test_malformed_multiset_multi_start_is_refused(codegen):
    events, _ = CASES["multiset_multi_start"]
    names = ("v",)
    if codegen:
        events, names = _pair(events), ("v", "n")
    with pytest.raises(InputError, match="without its start edge"):
        stream(events, names, clean=False).stitch().to_arrow()

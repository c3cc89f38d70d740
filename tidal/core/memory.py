"""The C allocator's settings for columnar work (glibc only; no temporal semantics).

numpy takes its arrays from ``malloc``. glibc serves a request above its *mmap threshold* with a
fresh ``mmap`` (pages the kernel zeroes and faults in one by one, returned to it on ``free``), and
moves that threshold up, at run time, to the size of the largest such block freed. So the same
query runs at different speeds depending on what ran before it in the process: measured on the
CSV join of ``bench/bench_sql.py``, 0.41 s of CPU alone and 0.51-0.59 s after another query. With
the threshold fixed at 32 MiB (glibc's largest dynamic value) a batch's arrays (an 80,000-row int64
column is 640 KB; a 1M-row one 8 MB) are reused from the heap in every run, and only very large
blocks are mapped: both runs took 0.41-0.43 s.

:func:`tune_allocator` sets it once, when tidal's core is imported. A threshold the user gave glibc
(``MALLOC_MMAP_THRESHOLD_``) is left alone, and ``TIDAL_MALLOC=default`` keeps glibc's own policy.
"""

from __future__ import annotations

import os

MMAP_THRESHOLD = 32 * 1024 * 1024
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number (malloc.h)
_tuned: bool | None = None


def tune_allocator() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` (once per process); whether it is set."""
    global _tuned
    if _tuned is not None:
        return _tuned
    _tuned = False
    if os.environ.get("TIDAL_MALLOC", "").lower() == "default" or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        os.confstr("CS_GNU_LIBC_VERSION")  # glibc only (musl, macOS, Windows: another allocator)
        import ctypes

        libc = ctypes.CDLL(None)
        _tuned = bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (ValueError, OSError, AttributeError):
        pass
    return _tuned

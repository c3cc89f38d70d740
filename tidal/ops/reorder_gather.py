"""A release of the reorder operator's payload store as one compiled pass: merge, map and gather together.

No temporal semantics of its own (:mod:`tidal.ops.reorder` states them). The sorter's output and the in-order
queue's prefix are merged by (time, row id) as in :func:`tidal.ops.reorder_kernels._merge_map`; each row's place
in the store is found, and every fixed-width column (numbers, times, booleans, with their validity bits) is
copied from that place to the output in the same pass, so no row-index array is written and read back once per
column. The kernel reads and writes columns through their memory addresses (one table of addresses per column
and piece), so one compiled kernel serves every schema. Columns it cannot copy (text, nested, decimals) are
taken by Arrow from the positions, which the kernel then also writes.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import pyarrow as pa
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .join.store import _fixed_width
from .reorder_kernels import _position


def _memory(ty):
    """A load and a store of one ``ty`` at an address (an int64)."""

    @intrinsic
    def load(typingctx, addr):
        def codegen(context, builder, sig, args):
            ptr = builder.inttoptr(args[0], context.get_value_type(ty).as_pointer())
            return builder.load(ptr, align=1)

        return ty(types.int64), codegen

    @intrinsic
    def store(typingctx, addr, value):
        def codegen(context, builder, sig, args):
            ptr = builder.inttoptr(args[0], context.get_value_type(ty).as_pointer())
            builder.store(context.cast(builder, args[1], sig.args[1], ty), ptr, align=1)
            return context.get_dummy_value()

        return types.void(types.int64, value), codegen

    @intrinsic
    def put(typingctx, addr, value, mode):
        """A store that, when ``mode`` is :data:`STREAMING` (an empty uint8 array: the kernel is compiled once
        per mode), goes to memory without first reading the line it overwrites into the caches (non-temporal)."""
        streaming = isinstance(mode, types.Array) and mode.dtype == types.uint8

        def codegen(context, builder, sig, args):
            ptr = builder.inttoptr(args[0], context.get_value_type(ty).as_pointer())
            st = builder.store(context.cast(builder, args[1], sig.args[1], ty), ptr, align=1)
            if streaming:
                st.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
            return context.get_dummy_value()

        return types.void(types.int64, value, mode), codegen

    return load, store, put


_load8, _store8, _put8 = _memory(types.int64)
_load4, _store4, _put4 = _memory(types.int32)
_load2, _store2, _ = _memory(types.int16)
_load1, _store1, _ = _memory(types.uint8)
CACHED = np.zeros(0, dtype=np.int8)  # the kernel's store mode: plain stores
STREAMING = np.zeros(0, dtype=np.uint8)  # non-temporal stores


@intrinsic
def _fence(typingctx, mode):
    """After streaming stores: order them before any later store (another thread then sees the output whole)."""
    streaming = isinstance(mode, types.Array) and mode.dtype == types.uint8

    def codegen(context, builder, sig, args):
        if streaming:
            builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(mode), codegen


@nb.njit(cache=True, nogil=True, inline="always")
def _bit(addr, k):
    return (_load1(addr + (k >> 3)) >> (k & 7)) & 1


@nb.njit(cache=True, nogil=True, inline="always")
def _set_bit(addr, k):
    _store1(addr + (k >> 3), _load1(addr + (k >> 3)) | (1 << (k & 7)))


@nb.njit(cache=True, nogil=True, inline="always")
def _slot(src, c, q, present):
    return src[c, q] if present else 0


@nb.njit(cache=True, nogil=True, inline="always")
def _at(dst, c, present):
    return dst[c] if present else 0


@nb.njit(cache=True, nogil=True)
def _merge_gather(
    at,
    ar,
    bt,
    br,
    compact,
    split,
    base,
    alive,
    starts,
    out_t,
    ends,
    src,
    dst,
    vsrc,
    vbit,
    nulls,
    vdst,
    index,
    plus1,
    streaming,
):
    """Merge the sorted (time, row id) pairs ``a`` and ``b`` by (time, row id) into ``out_t`` and copy each row's
    columns to the output in the same pass. A row's position ``p`` in the store's index space is found as in
    ``_merge_map`` (and marked released in ``alive``); it lies in piece ``q`` (``starts[q] <= p < starts[q + 1]``)
    at ``w = p - starts[q]``. Column ``c`` of piece ``q`` has its values at address ``src[c, q]``: 8, 4, 2, 1
    bytes wide for ``c`` below ``ends[0]``, ``ends[1]``, ``ends[2]``, ``ends[3]``, then bit-packed booleans
    below ``ends[4]`` (``src`` is then a bit position: address * 8 + bit offset); the output's values at
    ``dst[c]`` (booleans: a zeroed bitmap). Validity: ``vsrc[c, q]`` the address of piece ``q``'s bitmap (0: no
    nulls), ``vbit[c, q]`` its bit offset; the columns ``nulls`` have nulls, their output bitmaps (zeroed) at
    ``vdst[c]``. ``index`` (empty, or one slot per row) gets the positions. ``plus1`` (an address, 0: none) gets
    each row's time + 1 (points' other times). ``streaming`` (:data:`STREAMING` or :data:`CACHED`): the times and
    the 8- and 4-byte columns are written by non-temporal stores (a release larger than the caches: no read of
    the lines written). The first four 8-byte and two 4-byte columns are copied through addresses held in locals
    (updated when the piece changes), the rest by loops over the tables. Returns the least and greatest position."""
    na = at.shape[0]
    nb_ = bt.shape[0]
    lo = alive.shape[0]
    hi = -1
    e8, e4, e2, e1, eb = ends[0], ends[1], ends[2], ends[3], ends[4]
    n4 = e4 - e8
    f8 = min(e8, 4)  # the 8-byte columns held in locals, then the 4-byte ones
    f4 = e8 + min(n4, 2)
    nv = nulls.shape[0]
    positions = index.shape[0] > 0
    d0, d1, d2, d3 = (
        _at(dst, 0, e8 > 0),
        _at(dst, 1, e8 > 1),
        _at(dst, 2, e8 > 2),
        _at(dst, 3, e8 > 3),
    )
    g0, g1 = _at(dst, e8, n4 > 0), _at(dst, e8 + 1, n4 > 1)
    tdst = out_t.ctypes.data
    q = -1
    first = 0
    limit = -1  # no piece yet
    s0 = s1 = s2 = s3 = h0 = h1 = 0
    i = 0
    j = 0
    for k in range(na + nb_):
        if j < nb_ and (i >= na or bt[j] < at[i] or (bt[j] == at[i] and br[j] < ar[i])):  # as _merge_map
            x, r = bt[j], br[j]
            j += 1
        else:
            x, r = at[i], ar[i]
            i += 1
        p = _position(r, compact, split, base)
        _put8(tdst + 8 * k, x, streaming)
        if plus1:
            _put8(plus1 + 8 * k, x + 1, streaming)
        alive[p] = False
        if positions:
            index[k] = p
        lo = min(lo, p)
        hi = max(hi, p)
        if p >= limit or p < first:
            q = 0
            while p >= starts[q + 1]:
                q += 1
            first = starts[q]
            limit = starts[q + 1]
            s0, s1, s2, s3 = (
                _slot(src, 0, q, e8 > 0),
                _slot(src, 1, q, e8 > 1),
                _slot(src, 2, q, e8 > 2),
                _slot(src, 3, q, e8 > 3),
            )
            h0, h1 = _slot(src, e8, q, n4 > 0), _slot(src, e8 + 1, q, n4 > 1)
        w = p - first
        if e8 > 0:
            _put8(d0 + 8 * k, _load8(s0 + 8 * w), streaming)
            if e8 > 1:
                _put8(d1 + 8 * k, _load8(s1 + 8 * w), streaming)
                if e8 > 2:
                    _put8(d2 + 8 * k, _load8(s2 + 8 * w), streaming)
                    if e8 > 3:
                        _put8(d3 + 8 * k, _load8(s3 + 8 * w), streaming)
                        for c in range(f8, e8):
                            _put8(dst[c] + 8 * k, _load8(src[c, q] + 8 * w), streaming)
        if n4 > 0:
            _put4(g0 + 4 * k, _load4(h0 + 4 * w), streaming)
            if n4 > 1:
                _put4(g1 + 4 * k, _load4(h1 + 4 * w), streaming)
                for c in range(f4, e4):
                    _put4(dst[c] + 4 * k, _load4(src[c, q] + 4 * w), streaming)
        if eb > e4:
            for c in range(e4, e2):
                _store2(dst[c] + 2 * k, _load2(src[c, q] + 2 * w))
            for c in range(e2, e1):
                _store1(dst[c] + k, _load1(src[c, q] + w))
            for c in range(e1, eb):
                b = src[c, q] + w
                if _bit(b >> 3, b & 7):
                    _set_bit(dst[c], k)
        for m in range(nv):
            c = nulls[m]
            v = vsrc[c, q]
            if v == 0 or _bit(v, vbit[c, q] + w):
                _set_bit(vdst[c], k)
    _fence(streaming)
    return lo, hi


def _width(t: pa.DataType) -> int:
    """Bytes per value of a column the kernel copies (0: bit-packed booleans), or -1: Arrow takes it."""
    if pa.types.is_boolean(t):
        return 0
    return t.bit_width // 8 if _fixed_width(t) else -1


def _address(col: pa.Array, width: int) -> int | None:
    """Where ``col``'s first value is (booleans: its bit position, address * 8 + bit offset)."""
    buf = col.buffers()[1]
    if buf is None:
        return None
    if width == 0:
        return buf.address * 8 + col.offset
    return buf.address + width * col.offset


_ORDER = (8, 4, 2, 1, 0)
# an output of this many bytes or more, for a consumer that keeps it, is written by non-temporal stores: it is
# larger than a core's caches, so a normal store would first read each line it overwrites from memory (measured:
# 2M rows of four columns, 15.4 -> 11.9 ms)
_STREAM_FROM = 1 << 20  # the kernel's column groups, in order


def layout(columns: dict[str, pa.Array]) -> dict[str, tuple]:
    """Where each column of a piece lies, for :meth:`Plan.make` (worked out once per piece): its type, width
    (-1: Arrow takes it), the address of its values and of its validity bits (0: no nulls), their bit offset."""
    out = {}
    for name, col in columns.items():
        w = _width(col.type)
        at = _address(col, w) if w >= 0 else None
        valid = col.buffers()[0] if at is not None and col.null_count else None
        out[name] = (col.type, -1 if at is None else w, at or 0, 0 if valid is None else valid.address, col.offset)
    return out


def numbers(values: np.ndarray) -> tuple:
    """:func:`layout`'s entry for int64 numpy values (the other times)."""
    return (pa.int64(), 8, values.ctypes.data, 0, 0)


class Plan:
    """The kernel's arguments for some columns of some pieces: the columns it copies (by width group) and their
    addresses, and the columns Arrow takes from the positions (``taken``). ``None`` from :meth:`make` when the
    pieces do not agree on a column's type."""

    __slots__ = ("copied", "types", "ends", "src", "vsrc", "vbit", "nulls", "taken")

    @classmethod
    def make(cls, columns: dict[str, list[tuple]]) -> Plan | None:
        """``columns``: each column's :func:`layout` entries, one per piece, the pieces in index-space order."""
        plan = cls()
        groups: dict[int, list[str]] = {w: [] for w in _ORDER}
        plan.taken, plan.types = [], {}
        for name, entries in columns.items():
            t = entries[0][0]
            if any(e[0] != t for e in entries[1:]):
                return None
            plan.types[name] = t
            w = min(e[1] for e in entries)
            (plan.taken if w < 0 else groups[w]).append(name)
        plan.copied = [(n, w) for w in _ORDER for n in groups[w]]
        plan.ends = np.cumsum([len(groups[w]) for w in _ORDER]).astype(np.int64)
        pieces = len(next(iter(columns.values())))
        table = np.array([[e[2:] for e in columns[n]] for n, _ in plan.copied], dtype=np.int64)
        table = table.reshape(len(plan.copied), pieces, 3)
        plan.src, plan.vsrc, plan.vbit = (np.ascontiguousarray(table[:, :, k]) for k in range(3))
        plan.nulls = np.flatnonzero(plan.vsrc.any(axis=1)).astype(np.int64)
        return plan


def _memory_of(nbytes: int) -> pa.Buffer:
    """Room for an output column: numpy memory (the process's allocator keeps the pages of a freed output for the
    next; Arrow's pool gave each query's outputs fresh pages, faulted in and zeroed by the system, measured 6% of a
    sort collected by ``to_arrow()``)."""
    return pa.py_buffer(np.empty(max(nbytes, 1), dtype=np.uint8))


def _zeroed(nbytes: int) -> pa.Buffer:
    buf = _memory_of(nbytes)
    np.frombuffer(buf, dtype=np.uint8)[:] = 0
    return buf


def merge_gather(plan: Plan, t1, r1, t2, r2, space, alive, starts, times, index, plus1=None, streaming=True):
    """Run the kernel for ``plan`` (``space``: the store's ``(compact, split, base)``; ``starts``: the pieces'
    first positions and the end of the last; ``times``: room for the merged times; ``index``: room for the
    positions, or an empty array; ``plus1``: room for the times + 1, or None). Returns ``(lo, hi, columns)``: the
    least and greatest position and the columns the kernel copied, as Arrow arrays in memory from Arrow's pool,
    by name. ``streaming``: write the output with non-temporal stores when it is ``_STREAM_FROM`` bytes or more
    (for a consumer that keeps it and reads it later: one that reads it next finds it in no cache, measured 5%
    slower for a filter and select after the sort)."""
    n = len(times)
    if streaming:
        width = 8 + (0 if plus1 is None else 8) + sum(w for _, w in plan.copied)
        streaming = n * width >= _STREAM_FROM
    bufs = []
    dst = np.empty(len(plan.copied), dtype=np.int64)
    for c, (_, w) in enumerate(plan.copied):
        buf = _zeroed((n + 7) // 8) if w == 0 else _memory_of(n * w)
        bufs.append(buf)
        dst[c] = buf.address
    vbufs = [None] * len(plan.copied)
    vdst = np.zeros(len(plan.copied), dtype=np.int64)
    for c in plan.nulls.tolist():
        vbufs[c] = _zeroed((n + 7) // 8)
        vdst[c] = vbufs[c].address
    lo, hi = _merge_gather(
        t1,
        r1,
        t2,
        r2,
        *space,
        alive,
        starts,
        times,
        plan.ends,
        plan.src,
        dst,
        plan.vsrc,
        plan.vbit,
        plan.nulls,
        vdst,
        index,
        0 if plus1 is None else plus1.ctypes.data,
        STREAMING if streaming else CACHED,
    )
    cols = {
        name: pa.Array.from_buffers(plan.types[name], n, [vbuf, buf])
        for (name, _), buf, vbuf in zip(plan.copied, bufs, vbufs, strict=True)
    }
    return int(lo), int(hi), cols

"""Compiled helpers around the state-access kernel: operations out of the per-event grids (in the
serial order), and reads back into per-event columns."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def operations(issued, cell2d, src2d, srec2d, rec_shift, sourced):
    """The issued (event, template) pairs in row-major order (the serial order), with their cells,
    records, and source cells and records (-1: none)."""
    n, nk = issued.shape
    m = 0
    for i in range(n):
        for k in range(nk):
            if issued[i, k]:
                m += 1
    op_ev = np.empty(m, np.int64)
    op_tmpl = np.empty(m, np.int64)
    op_cell = np.empty(m, np.int64)
    op_rec = np.empty(m, np.int64)
    op_src = np.full(m, -1, np.int64)
    op_srec = np.full(m, -1, np.int64)
    j = 0
    for i in range(n):
        for k in range(nk):
            if issued[i, k]:
                op_ev[j] = i
                op_tmpl[j] = k
                c = cell2d[i, k]
                op_cell[j] = c
                op_rec[j] = c + rec_shift[k]
                if sourced:
                    op_src[j] = src2d[i, k]
                    op_srec[j] = srec2d[i, k]
                j += 1
    return op_ev, op_tmpl, op_cell, op_rec, op_src, op_srec


@numba.njit(cache=True, nogil=True)
def reads(op_ev, op_tmpl, rd_i, rd_f, slot, is_int, aborted, out_i, out_f, present):
    """Scatter each read operation's value to its read's row (``slot[template]``, -1: not a read)."""
    for j in range(len(op_ev)):
        s = slot[op_tmpl[j]]
        if s < 0:
            continue
        i = op_ev[j]
        if aborted[i]:
            continue
        if is_int[op_tmpl[j]]:
            out_i[s, i] = rd_i[j]
        else:
            out_f[s, i] = rd_f[j]
        present[s, i] = True

"""Fused state-access kernels: a serial walk over compute mode's grids, and owner lists of chains.

Compute mode decides, per event ``i`` and operation template ``k``, whether the event issues the
operation and the cell it addresses (the grids ``issued[i, k]``, ``cell2d[i, k]``, ``src2d[i, k]``,
or, for ``chains``, straight into the owner lists below). The kernels:

- ``serial``: one loop over the events in timestamp order, the templates unrolled in the loop
  body (no dispatch per operation), each read's value written straight into its output row; it
  decides each operation (``when``, keys) itself when compute mode compiles, else reads the grids. A
  failed condition puts back the transaction's earlier writes (their old values are locals) and
  skips the rest of it; a division by zero stops the loop and returns the operation
  (``i * nk + k``) for the caller to name.
- ``owner`` (the ``chains`` scheduler when no operation reads another record): every record
  belongs to one owner list for the whole run (a hash of its block of 16 records), so each
  record's operation chain is walked in timestamp order by whichever thread walks its list, and
  lists never share a record. A list holds the chains of its records merged in timestamp order
  (operation ids ``(i << shift) | k``, with their cells); it is walked with no barrier in between.
  A transaction whose operations lie in one list is decided there. One *spread* over several
  lists cannot see, in one list, that its condition failed in another: each list applies it as
  ``assumed`` (commit, at first) and records in ``fails[list, i]`` whether a condition failed on
  its own records (it evaluates the conditions of an assumed abort too, then undoes the
  transaction). ``tidal.tx.runs`` then finds the first spread transaction whose assumption was
  wrong, rewinds each list to its first transaction whose assumption changes (each kept write's
  old value is saved; a list's walk depends on nothing else) and walks again from there: every
  transaction before the first wrong assumption saw exactly the serial state, so each round
  fixes at least one more. A read's value is kept at its place in its list and scattered to the
  output rows afterwards (threads writing one output row would share its cache lines).
"""

from __future__ import annotations

from dataclasses import replace

import numba
import numpy as np

from ..expr.jit import load_kernel
from ..expr.nodes import Col, Compare, Const
from .codegen import _Source, guarded_keys
from .trace import READ, WRITE, OpTemplate, V

_DECORATOR = "@numba.njit(cache={cache}, nogil=True, error_model='numpy')\n"
_PARALLEL = "@numba.njit(cache={cache}, nogil=True, parallel=True, error_model='numpy')\n"


def _op_lines(k: int, t: OpTemplate, tint: bool, sint, slot: int, gen: _Source, pad: str, on) -> list[str]:
    """One operation of template ``k`` for event ``i``: ``on`` gives the code for an error, a failed
    condition, saving the old value (``save(cells)``), a read's output and the cells addressed."""
    cells = "icells" if tint else "fcells"
    lines = [f"{pad}c = {on['cell'](k)}"]
    if t.kind != WRITE or (t.condition is not None and V in t.condition.columns()):
        lines.append(f"{pad}v = {cells}[c]")
    if t.source is not None:
        lines.append(f"{pad}s = {'icells' if sint else 'fcells'}[{on['src'](k)}]")
    if t.kind == READ:
        if slot >= 0:
            lines.append(f"{pad}{on['read'](tint, slot)} = v")
        return lines
    body = pad
    if t.condition is not None:
        bad = gen.bad(t.condition)
        head = "if"
        if bad is not None:
            lines += [f"{pad}if {bad}:"] + [f"{pad}    {x}" for x in on["err"]]
            head = "elif"
        lines += [f"{pad}{head} not ({gen.src(t.condition)}):"] + [f"{pad}    {x}" for x in on["fail"]]
        lines.append(f"{pad}else:")
        body = pad + "    "
    bad = gen.bad(t.value)
    if bad is not None:
        lines += [f"{body}if {bad}:"] + [f"{body}    {x}" for x in on["err"]] + [f"{body}else:"]
        body += "    "
    cast = "np.int64" if tint else "np.float64"
    lines.append(f"{body}nv = {cast}({gen.src(t.value)})")
    lines += [f"{body}{x}" for x in on["save"](cells, k)]
    lines.append(f"{body}{cells}[c] = nv")
    return lines


def _args(events: dict[str, str]) -> str:
    names = sorted(events.values(), key=lambda a: int(a[1:]))
    return "".join(f", {a}" for a in names)


def serial_source(templates, target_int, source_int, slots, events, places=None, bits: bool = False, post=None) -> str:
    """The serial kernel: events ``lo..hi-1`` in order; returns -1, or the operation that divided by
    zero. With ``places`` (per template: (cell base, record base, size) of the target and of the
    source or None; ``events`` then names the key and ``when`` columns too), the kernel decides the
    operations itself, from the events, instead of reading compute mode's grids; it returns -2 at
    the first key outside its table or ``when`` it cannot evaluate (the caller lets compute mode
    name it). With ``bits`` (one thread only), a read sets its event's bit in ``rissued``, a row of
    bytes per read holding 8 events each (Arrow's validity layout: no packing afterwards), instead
    of a byte per event; a read without a ``when`` sets none (every event that reaches it issues it:
    its row is made whole afterwards, then masked by the commits).

    From the events, templates under the same ``when`` share one test of it (``when_groups``: a
    template joins an earlier one's group across templates whose ``when`` excludes its own, so no
    event's operations change order), and the event fields a group reads twice or more are loaded
    once, in the group.

    With ``post`` (``(outputs, lines)``: ``tidal.tx.postfuse``), each read's value goes to a local
    ``rv<slot>`` instead of its output row, and ``lines`` (over those locals, writing ``outputs``, the
    post-process's compiled fields) end each event's iteration."""
    shared = _shared_fields(templates, events)
    hoisted = {c: f"x{events[c]}" for c in shared}
    gen = _Source(events, hoisted)
    nk = len(templates)
    groups = when_groups(templates, gen) if places else [(None, [k]) for k in range(nk)]
    order = [k for _, ks in groups for k in ks]
    rows = read_bit_rows(templates, slots, events) if places else list(range(max(slots, default=-1) + 1))
    pos = {k: p for p, k in enumerate(order)}
    writes = [k for k in order if templates[k].kind != READ]
    head = "lo, hi, icells, fcells, aborted, out_i, out_f, rissued, count" if places else None
    head = head or "lo, hi, issued, cell2d, src2d, icells, fcells, aborted, out_i, out_f"
    if post is not None:
        head += "".join(f", {o}" for o in post[0])
    # the count of operations in a local (an array element would be stored and loaded again at every
    # operation: numba cannot tell that ``count`` is no table's array); event fields that several
    # templates read loaded once per event, for the same reason
    lines = [f"def kernel({head}{_args(events)}):"] + (["    cnt = 0"] if places else [])
    lines += ["    for i in range(lo, hi):"] + [f"        x{events[c]} = {events[c]}[i]" for c in shared]
    last_cond = max((pos[k] for k, t in enumerate(templates) if t.condition is not None), default=-1)
    saved = [k for k in writes if pos[k] < last_cond]
    for k in saved:
        lines.append(f"        o{k} = {'np.int64(0)' if target_int[k] else 'np.float64(0.0)'}")
        if places:
            lines += [f"        a{k} = False", f"        c{k} = 0"]
    for when, ks in groups:
        base = " " * 8
        ggen = gen
        if when is not None:  # one test for the group; the fields it reads twice or more, loaded here
            lines.append(f"{base}if {gen.src(when)}:")
            base += "    "
            local = {c: f"y{events[c]}" for c in _group_fields([templates[k] for k in ks], events, hoisted)}
            lines += [f"{base}{name} = {events[c]}[i]" for c, name in local.items()]
            ggen = _Source(events, {**hoisted, **local})
        for k in ks:
            t = templates[k]
            # without a branch in the one-thread walk only (``bits``): a thread's walk of its segment
            # must not store to a record of another's (record 0), even its own value
            if places and bits and len(ks) == 1 and k not in saved and _predicable(t, gen):
                lines += _predicated(t, target_int[k], places[k][0], gen, base)
                continue
            mark = None if not bits else slots[k] >= 0 and rows[slots[k]] == slots[k]  # a bit of its own
            lines += _template_lines(k, t, target_int, source_int, slots, places, mark, ggen, base, when, nk, [
                q for q in reversed(saved) if pos[q] < pos[k]
            ], k in saved, post is not None)  # fmt: skip
    if post is not None:
        lines += [" " * 8 + x for x in post[1]]
    if places:
        lines.append("    count[0] += cnt")
    lines.append("    return -1")
    return "\n".join(lines) + "\n"


def _template_lines(k, t, target_int, source_int, slots, places, bits, gen, base, when, nk, undo_of, keep, local=False):
    """Template ``k``'s lines in the serial kernel (under its group's ``when`` test when ``when``)."""
    undo = []
    for q in undo_of:
        test, cell = (f"a{q}", f"c{q}") if places else (f"issued[i, {q}]", f"cell2d[i, {q}]")
        undo += [f"if {test}:", f"    {'icells' if target_int[q] else 'fcells'}[{cell}] = o{q}"]

    def save(cells, k):
        if not keep:
            return []
        return [f"o{k} = {cells}[c]"] + ([f"c{k} = c", f"a{k} = True"] if places else [])

    on = {
        "err": [f"return i * {nk} + {k}"],
        "fail": undo + ["aborted[i] = 1", "continue"],
        "save": save,
        "read": lambda tint, slot: f"rv{slot}" if local else f"{'out_i' if tint else 'out_f'}[{slot}, i]",
        "cell": lambda k: f"cell2d[i, {k}]",
        "src": lambda k: f"src2d[i, {k}]",
    }
    lines = []
    pad = base + "    "
    if places is None:
        lines.append(f"{base}if issued[i, {k}]:")
    else:
        (cbase, _rbase, size), src = places[k]
        opened, pad = guarded_keys(
            gen, t if when is None else replace(t, when=None), size, src, base, ["return -2"], ["return -2"]
        )
        lines += opened
        on["cell"] = lambda k, base=cbase: f"{base} + key0"
        if src is not None:
            on["src"] = lambda k, base=src[0]: f"{base} + key1"
        lines.append(f"{pad}cnt += 1")
        if slots[k] >= 0 and bits is not None:  # without a when, every event issues it (``runs._finish``)
            if bits and t.when is not None:  # (False: the read shares another's bits, ``read_bit_rows``)
                lines.append(f"{pad}rissued[{slots[k]}, i >> 3] |= np.uint8(1 << (i & 7))")
        elif slots[k] >= 0:
            lines.append(f"{pad}rissued[{slots[k]}, i] = True")
    return lines + _op_lines(k, t, target_int[k], source_int[k], slots[k], gen, pad, on)


def _predicable(t: OpTemplate, gen: _Source) -> bool:
    """A write or read-modify-write alone under its ``when``, with no condition, no source and nothing
    that can fail to evaluate (``when``, key, value): run without a branch (``_predicated``)."""
    if t.when is None or t.kind == READ or t.condition is not None or t.source is not None:
        return False
    return all(gen.bad(x) is None for x in (t.when, t.key, t.value))


def _predicated(t: OpTemplate, tint: bool, place, gen: _Source, pad: str) -> list[str]:
    """The operation without a branch on its ``when`` (a random ``when`` mispredicts often, and costs
    more than the operation): an event that does not issue it addresses record 0 instead of its key
    and stores the value the cell holds (nothing changes), and counts no operation."""
    cells = "icells" if tint else "fcells"
    cbase, _, size = place
    cast = "np.int64" if tint else "np.float64"
    return [
        f"{pad}w = bool({gen.src(t.when)})",
        f"{pad}key0 = {gen.src(t.key)}",
        f"{pad}key0 = key0 if w else key0 - key0  # 0 of the key's own type (a uint64 with 0 is a float)",
        f"{pad}if key0 < 0 or key0 >= {size}:",
        f"{pad}    return -2",
        f"{pad}cnt += w",
        f"{pad}c = {cbase} + key0",
        f"{pad}v = {cells}[c]",
        f"{pad}nv = {cast}({gen.src(t.value)})",
        f"{pad}{cells}[c] = nv if w else v",
    ]


def read_bit_rows(templates, slots, events) -> list[int]:
    """Per read (its slot), the read whose validity bits it shares in the serial walk from the events
    (``bits``): the first read of its ``when`` group. Every read of a group is issued by the same
    events (the group's ``when``; an abort between them makes all of them null), so the walk sets
    one bit per event and group, not one per read."""
    rows = list(range(max(slots, default=-1) + 1))
    for when, ks in when_groups(templates, _Source(events)):
        reads = [slots[k] for k in ks if slots[k] >= 0]
        if when is not None:
            for r in reads[1:]:
                rows[r] = reads[0]
    return rows


def _equals_const(node):
    """``(field, value)`` for a ``when`` of the form ``e.field == constant`` (either side), else None."""
    if isinstance(node, Compare) and node.op == "==":
        for a, b in ((node.left, node.right), (node.right, node.left)):
            if isinstance(a, Col) and isinstance(b, Const) and type(b.value) in (int, bool):
                return a.name, b.value
    return None


def when_groups(templates, gen) -> list[tuple]:
    """Templates in groups ``(when, [k, ...])`` that share one ``when`` test (``None``: a group of one,
    tested alone). A template joins the last group with its ``when`` (one that cannot fail to
    evaluate) when every template after that group has a ``when`` excluding its own (``e.f == 1``
    against ``e.f == 2``): no event issues both, so no event's operations change order."""
    groups: list[tuple] = []
    for k, t in enumerate(templates):
        mine = None if t.when is None or gen.bad(t.when) is not None else repr(t.when)
        eq = _equals_const(t.when)
        target = None
        if mine is not None:
            for g in range(len(groups) - 1, -1, -1):
                when, ks = groups[g]
                if when is not None and repr(when) == mine:
                    target = g
                    break
                other = [_equals_const(templates[q].when) for q in ks]
                if eq is None or any(o is None or o[0] != eq[0] or o[1] == eq[1] for o in other):
                    break
        if target is None:
            groups.append((None if mine is None else t.when, [k]))
        else:
            groups[target][1].append(k)
    return [(None, ks) if len(ks) == 1 else (when, ks) for when, ks in groups]


def _group_fields(templates, events, hoisted) -> list[str]:
    """The event fields (not loaded per event already) that two of a group's templates read."""
    uses: dict[str, int] = {}
    for t in templates:
        cols = set()
        for node in [t.key, t.value, t.condition] + ([t.source[1]] if t.source else []):
            if node is not None:
                cols |= node.columns()
        for c in cols:
            uses[c] = uses.get(c, 0) + 1
    return sorted(c for c, k in uses.items() if k > 1 and c in events and c not in hoisted)


def _shared_fields(templates, events) -> list[str]:
    """The event fields (of ``events``) loaded into locals once per event: those that the ``when`` of
    two templates or more reads, and those that two templates without a ``when`` read (every event
    reads them; a field read under a ``when`` only is better loaded where it is needed)."""
    uses: dict[str, int] = {}
    for t in templates:
        nodes = [t.when] if t.when is not None else [t.key, t.value, t.condition]
        nodes += [t.source[1]] if t.source and t.when is None else []
        cols = set()
        for node in nodes:
            if node is not None:
                cols |= node.columns()
        for c in cols:
            uses[c] = uses.get(c, 0) + 1
    return sorted(c for c, k in uses.items() if k > 1 and c in events)


def owner_source(templates, target_int, source_int, slots, events) -> str:
    """The owner kernel: thread ``t`` walks ``lists[start[t]:ptr[t + 1]]`` (see the module's docstring)."""
    gen = _Source(events)
    sh = shift(len(templates))
    common = "ptr, start, lists, cells, srcs, t_write, t_int, icells, fcells, assumed, spread, fails, kept"
    common += f", old_i, old_f, rd_i, rd_f, errf{_args(events)}"
    lines = [
        f"def kernel(nthreads, {common}):",
        "    for t in numba.prange(nthreads):",
        f"        walk(t, {common})",
        "",
        "",
        "@numba.njit(nogil=True, cache=True, error_model='numpy')",
        f"def walk(t, {common}):",
        "    b = ptr[t + 1]",
        "    cur = -2  # no transaction yet (and not the end's -1)",
        "    txn_start = start[t]",
        "    dead = False",
        "    op = 0",
        "    for p in range(start[t], b + 1):",
        "        i = -1",
        "        if p < b:",
        "            op = lists[p]",
        f"            i = op >> {sh}",
        "        if i != cur:",
        "            if cur >= 0 and not dead and assumed[cur] and spread[cur]:",
        "                undo(txn_start, p, lists, cells, t_int, kept, old_i, old_f, icells, fcells)",
        "            if p == b:",
        "                break",
        "            cur = i",
        "            txn_start = p",
        "            dead = False",
        "        kept[p] = 0",
        "        if dead:",
        "            continue",
        f"        k = op & {(1 << sh) - 1}",
        "        ok = True",
        "        err = False",
    ]
    on = {
        "err": ["err = True"],
        "fail": ["ok = False"],
        # without conditions nothing is ever undone: no old values to keep
        "save": (lambda cells, k: [f"{'old_i' if cells == 'icells' else 'old_f'}[p] = {cells}[c]", "kept[p] = 1"])
        if any(t.condition is not None for t in templates)
        else (lambda cells, k: []),
        "read": lambda tint, slot: f"{'rd_i' if tint else 'rd_f'}[p]",
        "cell": lambda k: "cells[p]",
        "src": lambda k: "srcs[p]",
    }
    for k, t in enumerate(templates):
        lines.append(f"        {'if' if k == 0 else 'elif'} k == {k}:")
        lines += _op_lines(k, t, target_int[k], source_int[k], slots[k], gen, " " * 12, on)
    lines += [
        "        if err:",
        "            errf[t] = 1",
        "            ok = False",
        "        if not ok:",
        "            fails[t, i] = 1",
        "            undo(txn_start, p, lists, cells, t_int, kept, old_i, old_f, icells, fcells)",
        "            dead = True",
        "",
        "",
        "@numba.njit(nogil=True, cache=True)",
        "def undo(lo, hi, lists, cells, t_int, kept, old_i, old_f, icells, fcells):",
        "    for q in range(hi - 1, lo - 1, -1):",
        "        if kept[q]:",
        f"            k = lists[q] & {(1 << sh) - 1}",
        "            if t_int[k]:",
        "                icells[cells[q]] = old_i[q]",
        "            else:",
        "                fcells[cells[q]] = old_f[q]",
        "            kept[q] = 0",
    ]
    return "\n".join(lines) + "\n"


def shift(nk: int) -> int:
    """Operation ids are ``(i << shift) | k``: the bits that hold a template number."""
    return max(1, (nk - 1).bit_length())


def load_serial(source: str):
    return load_kernel(source, decorator=_DECORATOR)


def load_owner(source: str):
    return load_kernel(source, decorator=_PARALLEL)


@numba.njit(cache=True, nogil=True)
def _owner(cell, shift_k, nthreads):
    blk = (cell + shift_k) >> 4
    return ((blk * 2654435761) & 0xFFFFFFFF) * nthreads >> 32


@numba.njit(cache=True, nogil=True)
def _count(issued, cell2d, rec_shift, nthreads, lo, hi, counts):
    for i in range(lo, hi):
        for k in range(issued.shape[1]):
            if issued[i, k]:
                counts[_owner(cell2d[i, k], rec_shift[k], nthreads)] += 1


@numba.njit(cache=True, nogil=True)
def _scatter(issued, cell2d, src2d, rec_shift, nthreads, lo, hi, at, lists, cells, srcs, sh, spread):
    for i in range(lo, hi):
        first = -1
        for k in range(issued.shape[1]):
            if issued[i, k]:
                t = _owner(cell2d[i, k], rec_shift[k], nthreads)
                if first < 0:
                    first = t
                elif t != first:
                    spread[i] = 1
                p = at[t]
                lists[p] = (i << sh) | k
                cells[p] = cell2d[i, k]
                if len(srcs) == len(lists):
                    srcs[p] = src2d[i, k]
                at[t] = p + 1


@numba.njit(cache=True, nogil=True, parallel=True)
def owner_lists(issued, cell2d, src2d, rec_shift, nthreads, sh):
    """Each issued operation's id (``(i << sh) | k``) in its record's owner's list, in timestamp order:
    ``(lists, ptr)``, thread ``t``'s list being ``lists[ptr[t]:ptr[t + 1]]``. A record's owner is a
    hash of its block of 16 neighbouring records: hot records spread over the threads, and threads
    seldom write into the same cache line. Each thread counts, then places, a range of events."""
    n = issued.shape[0]
    chunks = nthreads
    counts = np.zeros((chunks, nthreads), np.int64)
    for c in numba.prange(chunks):
        _count(issued, cell2d, rec_shift, nthreads, c * n // chunks, (c + 1) * n // chunks, counts[c])
    ptr = np.zeros(nthreads + 1, np.int64)
    pos = np.zeros((chunks, nthreads), np.int64)
    for t in range(nthreads):
        ptr[t + 1] = ptr[t]
        for c in range(chunks):
            pos[c, t] = ptr[t + 1]
            ptr[t + 1] += counts[c, t]
    m = ptr[nthreads]
    lists, cells = np.empty(m, np.int64), np.empty(m, np.int64)
    # a grid of sources has a row per event (one event's grid too: its one row is not the unsourced (1, k))
    srcs = np.empty(m if src2d.shape[0] == n else 1, np.int64)
    spread = np.zeros(n, np.uint8)
    for c in numba.prange(chunks):
        lo, hi = c * n // chunks, (c + 1) * n // chunks
        _scatter(issued, cell2d, src2d, rec_shift, nthreads, lo, hi, pos[c], lists, cells, srcs, sh, spread)
    return lists, ptr, cells, srcs, spread


@numba.njit(cache=True, nogil=True)
def first_wrong(assumed, fails, spread, lo, failed):
    """Each transaction's outcome from ``lo`` on (``failed``: a condition failed in some list), and
    the first one spread over several lists whose assumed outcome was wrong, or -1 (a transaction
    within one list is decided there, whatever was assumed)."""
    wrong = -1
    for i in range(lo, len(assumed)):
        f = 0
        for t in range(fails.shape[0]):
            f |= fails[t, i]
        failed[i] = f
        if wrong < 0 and spread[i] and assumed[i] != f:
            wrong = i
    return wrong


@numba.njit(cache=True, nogil=True)
def restarts(lists, ptr, sh, wrong, assumed, failed, spread, start):
    """Where each list walks again: at its first transaction from ``wrong`` on whose assumption
    changes (a list's walk depends on nothing else), or at its end."""
    for t in range(len(ptr) - 1):  # one thread: a parallel call costs more than this walk
        p = ptr[t] + np.searchsorted(lists[ptr[t] : ptr[t + 1]], wrong << sh)
        while p < ptr[t + 1]:
            i = lists[p] >> sh
            if spread[i] and assumed[i] != failed[i]:
                break
            p += 1
        start[t] = p


@numba.njit(cache=True, nogil=True)
def rewind(ptr, start, lists, sh, cells, t_int, kept, old_i, old_f, icells, fcells, fails):
    """Put back, newest first, every kept write from ``start[t]`` on in each list, and forget the
    conditions that failed there (one thread: what it puts back is short next to a walk)."""
    for t in range(len(ptr) - 1):
        for q in range(ptr[t + 1] - 1, start[t] - 1, -1):
            fails[t, lists[q] >> sh] = 0
            if kept[q]:
                k = lists[q] & ((1 << sh) - 1)
                if t_int[k]:
                    icells[cells[q]] = old_i[q]
                else:
                    fcells[cells[q]] = old_f[q]
                kept[q] = 0


@numba.njit(cache=True, nogil=True, parallel=True)
def scatter_reads(lists, ptr, sh, slot, t_int, rd_i, rd_f, out_i, out_f, nthreads):
    """Each read's value from its place in its thread's list to its output row; a thread per range
    of events (so that no two threads write into one cache line of the outputs)."""
    n = out_i.shape[1]
    for c in numba.prange(nthreads):
        lo, hi = c * n // nthreads, (c + 1) * n // nthreads
        for t in range(len(ptr) - 1):
            a = ptr[t] + np.searchsorted(lists[ptr[t] : ptr[t + 1]], lo << sh)
            b = ptr[t] + np.searchsorted(lists[ptr[t] : ptr[t + 1]], hi << sh)
            for p in range(a, b):
                op = lists[p]
                i = op >> sh
                k = op & ((1 << sh) - 1)
                s = slot[k]
                if s >= 0:
                    if t_int[k]:
                        out_i[s, i] = rd_i[p]
                    else:
                        out_f[s, i] = rd_f[p]

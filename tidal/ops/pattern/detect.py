"""Detect: row pattern matching over a stream, one automaton per key (Trill's Detect; SQL's MATCH_RECOGNIZE).

Semantics. Per key (the stream's group; all events when ungrouped), the events are taken in sync-time
order (events with equal sync times in the order the stream delivers them); an event's lifetime end is
ignored (an interval or start edge is an event at its start; an end edge is no event). A *match* is a
run of consecutive events ``r_s .. r_e`` with a mapping of each event to a pattern variable such that
the variables spell a word of the pattern and each event satisfies its variable's condition (conditions
may read earlier events of the match, see :mod:`.conditions`); with ``within = w``, also ``time(r_e) -
time(r_s) < w``. Matches are found the way SQL's row pattern matching finds them: at the first start
position where a match exists, the *preferred* match (greedy quantifiers prefer more iterations,
alternation its left side: the first match a backtracking matcher would find); then the next search
starts per the skip mode: ``"past_last_row"`` after ``r_e``, ``"to_next_row"`` at ``r_{s+1}``,
``("to_first", X)`` / ``("to_last", X)`` at the first / last event mapped to ``X`` (an
:class:`InputError` when the match has none, or when that is ``r_s`` itself: the search would never move
on).

Output: one point event per match, ``[time(r_e), time(r_e) + 1)`` (a start edge at ``time(r_e)`` with
``lifetime="start_edge"``: SQL's rows), carrying the match's key and its measures. It is emitted once
the match is final: no later event can give a preferred match from an
earlier or the same start (every partial match that could has died: its next event failed, or
``within`` has passed, which progress shows: an event or punctuation at ``time(r_s) + w`` or later),
and every earlier start has been settled. Output punctuation is the input's progress, held back to
the end time of the oldest match not yet final. State is the events of each key back to the oldest
partial match (plus what ``PREV`` reads), so ``within`` bounds it; without ``within`` a partial match
lives until an event fails it or the input completes.

The automaton is a Pike VM over :mod:`.syntax`'s program, one instance per start position, its
threads in order of preference; threads in the same state with the same referenced rows are merged
(the preferred one is kept: their futures are identical).
"""

from __future__ import annotations

import copy
from collections import deque

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch, concat_batches
from ...core.errors import InputError, PlanError
from ...core.time import INFINITY, MIN_TIME
from ..base import Operator, ReorderBuffer
from ..keys import KeyIndex
from .conditions import measure_value
from .syntax import JMP, MATCH, SPLIT

SKIPS = ("past_last_row", "to_next_row", "to_first", "to_last")


def skip_mode(skip) -> tuple[str, str | None]:
    """``"past_last_row"``, ``"to_next_row"``, ``("to_first", "A")`` or ``("to_last", "A")``."""
    if isinstance(skip, str) and skip in SKIPS[:2]:
        return skip, None
    if isinstance(skip, tuple | list) and len(skip) == 2 and skip[0] in SKIPS[2:] and isinstance(skip[1], str):
        return skip[0], skip[1]
    raise PlanError(f"skip is 'past_last_row', 'to_next_row', ('to_first', VAR) or ('to_last', VAR); got {skip!r}")


class _Key:
    __slots__ = ("rows", "base", "n", "next_start", "attempts", "rep")

    def __init__(self, rep: int):
        self.rows: list = []
        self.base = 0  # sequence number of rows[0]
        self.n = 0  # events seen
        self.next_start = 0
        self.attempts: deque = deque()  # [start, start time, threads, match, match end time], by start
        self.rep = rep


class DetectOp(Operator):
    """Row pattern matching per key; see the module docstring."""

    name = "Detect"

    def __init__(self, program, conditions: dict, measures: dict, fields: list[str], out_schema: pa.Schema,
                 within: int | None = None, skip="past_last_row", text: str = "", lifetime: str = "point"):  # fmt: skip
        super().__init__()
        self.prog = program
        self.ops, self.arg_a, self.arg_b = program.op, program.a, program.b
        self.var_names = list(program.names)
        self.conds = [conditions.get(v) for v in self.var_names]
        self.measures = list(measures.items())
        self.fields = list(fields)
        self.col = {f: i for i, f in enumerate(self.fields)}
        self.out_schema = out_schema
        self.within = within
        self.skip, self.skip_var = skip_mode(skip)
        self.text = text
        self.lifetime = lifetime
        # registers: (kind, var) slots the conditions read; threads carry their row numbers
        slots: list = []
        for v, c in zip(self.var_names, self.conds, strict=True):
            for r in () if c is None else c.refs:
                if r.var is not None and r.var != v and r.var in self.var_names:
                    slot = ("first" if r.kind == "first" else "last", r.var)
                    if slot not in slots:
                        slots.append(slot)
                if r.kind == "first" and r.var == v and ("first", v) not in slots:
                    slots.append(("first", v))
        self.slots = slots
        self.slot_of = {s: i for i, s in enumerate(slots)}
        self.on_var = [[i for i, (_, v) in enumerate(slots) if v == name] for name in self.var_names]
        self.referencing = any(c is not None and c.refs for c in self.conds)
        self.max_prev = max([r.offset for c in self.conds if c is not None for r in c.refs if r.kind == "prev"] + [0])
        self.reached = [self._reach(pc) for pc in range(len(self.ops))]
        self.start_threads = tuple(self._closure_from(0, None, (-1,) * len(slots)))
        self.keys: KeyIndex | None = None
        self.reps: EventBatch | None = None
        self.state: dict[int, _Key] = {}
        self.out = ReorderBuffer()
        self.found: list = []  # (key id, end time, measure values) since the last flush
        self.now = MIN_TIME
        self.punctuated = MIN_TIME

    @property
    def variant(self) -> str:
        parts = [f"pattern {self.text}" if self.text else "pattern"]
        if self.within is not None:
            parts.append(f"within {self.within}")
        parts.append(f"skip {self.skip}{' ' + self.skip_var if self.skip_var else ''}")
        for v, c in zip(self.var_names, self.conds, strict=True):
            parts.append(f"{v}: {'any row' if c is None else c.describe()}")
        return "; ".join(parts)

    # -- the automaton ----------------------------------------------------------------------------
    def _reach(self, pc: int) -> tuple:
        """The VAR and MATCH instructions reached from ``pc`` without consuming a row, in order of preference."""
        ops, a, b = self.ops, self.arg_a, self.arg_b
        out = []
        stack = [pc]
        while stack:
            p = stack.pop()
            if ops[p] == JMP:
                stack.append(a[p])
            elif ops[p] == SPLIT:
                stack.append(b[p])
                stack.append(a[p])
            elif p not in out:
                out.append(p)
        return tuple(out)

    def _closure_from(self, pc: int, labels, regs, out=None, seen=None) -> list:
        """Add the threads reached from ``pc`` without consuming a row, in order of preference; a thread in
        a state (and with referenced rows) that a preferred one already holds is merged into it."""
        out = [] if out is None else out
        seen = set() if seen is None else seen
        keyed = bool(self.slots)
        for p in self.reached[pc]:
            key = (p, regs) if keyed else p
            if key not in seen:
                seen.add(key)
                out.append((p, labels, regs))
        return out

    def _step(self, at: list, seq: int, t: int, i: int, local: list, ans: dict | None) -> None:
        """Advance a partial match's threads over event ``seq`` (row ``i`` of the batch): a thread goes on
        when its variable's condition holds (``local`` masks, or ``ans`` by thread for referencing ones)."""
        new: list = []
        seen: set = set()
        a, on_var = self.arg_a, self.on_var
        for j, (pc, labels, regs) in enumerate(at[2]):
            v = a[pc]
            if ans is not None and j in ans:
                if not ans[j]:
                    continue
            else:
                mask = local[v]
                if mask is not None and not mask[i]:
                    continue
            if on_var[v]:
                regs = list(regs)
                for s in on_var[v]:
                    if self.slots[s][0] == "last" or regs[s] < 0:
                        regs[s] = seq
                regs = tuple(regs)
            self._closure_from(pc + 1, (seq, v, labels), regs, new, seen)
        ops = self.ops
        for j, th in enumerate(new):
            if ops[th[0]] == MATCH:
                at[3], at[4] = th[1], t  # preferred to any match found before; cuts what it is preferred to
                del new[j:]
                break
        at[2] = new

    def _on_event(self, key: _Key, row: tuple, t: int, i: int, local: list, start: bool) -> None:
        seq = key.n
        key.n += 1
        atts = key.attempts
        if not atts and not self.max_prev:
            key.rows = [row]  # nothing before this event is needed any more: the stored rows restart here
            key.base = seq
        else:
            key.rows.append(row)
        if start and seq >= key.next_start:
            atts.append([seq, t, self.start_threads, None, None])  # (threads are replaced, never changed)
        within = self.within
        live = []
        for at in atts:
            if at[2]:
                if within is not None and t - at[1] >= within:
                    at[2] = ()
                else:
                    live.append(at)
        if live:
            answers = self._referencing(key, live, seq, row, i, local) if self.referencing else {}
            for at in live:
                self._step(at, seq, t, i, local, answers.get(id(at)))
        if atts and (not atts[0][2] or atts[0][0] < key.next_start):
            self._settle(key)

    def _startable(self, local: list, n: int) -> np.ndarray:
        """Per event of the batch: whether a match may start there (some first variable may accept it)."""
        first = {self.arg_a[pc] for pc, _, _ in self.start_threads}
        if any(local[v] is None for v in first):
            return np.ones(n, bool)
        mask = np.zeros(n, bool)
        for v in first:
            mask |= np.asarray(local[v], bool)
        return mask

    def _referencing(self, key: _Key, live: list, seq: int, row: tuple, i: int, local: list) -> dict:
        """Evaluate the conditions that read earlier rows for every thread that needs one: a batch per variable."""
        wanted: dict[int, list] = {}
        for at in live:
            for j, (pc, _, regs) in enumerate(at[2]):
                v = self.arg_a[pc]
                c = self.conds[v]
                if c is not None and c.refs:
                    wanted.setdefault(v, []).append((at, j, regs))
        answers: dict = {}
        for v, items in wanted.items():
            c = self.conds[v]
            if getattr(c, "direct", False):  # a Python condition over whole rows: no columns to build
                own = self.var_names[v]
                for at, j, regs in items:
                    earlier = []
                    for name in c.names:
                        pos = seq if name == own else regs[self.slot_of[("last", name)]]
                        earlier.append(None if pos < 0 or pos < key.base else key.rows[pos - key.base])
                    answers.setdefault(id(at), {})[j] = c.test(row, earlier)
                continue
            n = len(items)
            cols = {f: [row[k]] * n for f, k in self.col.items()}
            for k, r in enumerate(c.refs):
                cols[f"__ref{k}"] = [self._ref_value(key, r, self.var_names[v], seq, regs) for _, _, regs in items]
            arrays = {}
            for name, values in cols.items():
                t = self.ref_types[v].get(name) if name.startswith("__ref") else self.in_types[name]
                arrays[name] = pa.array(values, type=t) if t is not None else pa.array(values)
            ok = c.mask(EventBatch(np.zeros(n, np.int64), None, arrays))
            for (at, j, _), good in zip(items, ok.tolist(), strict=True):
                answers.setdefault(id(at), {})[j] = good
        return answers

    def _ref_value(self, key: _Key, r, own: str, seq: int, regs: tuple):
        if r.kind == "prev":
            base = seq if r.var is None or r.var == own else regs[self.slot_of[("last", r.var)]]
            at = -1 if base < 0 else base - r.offset
        elif r.var == own:
            at = regs[self.slot_of[("first", own)]] if r.kind == "first" else seq
            at = seq if at < 0 else at
        else:
            at = regs[self.slot_of[("first" if r.kind == "first" else "last", r.var)]]
        if at < 0 or at < key.base:
            return None
        if r.column is None:
            return True
        return key.rows[at - key.base][self.col[r.column]]

    def _settle(self, key: _Key) -> None:
        """Emit the matches that are final, in start order, and start the next search per the skip mode."""
        atts = key.attempts
        while atts:
            at = atts[0]
            if at[0] < key.next_start:
                atts.popleft()
                continue
            if at[2]:
                break
            atts.popleft()
            if at[3] is not None:
                key.next_start = self._emit(key, at)
        keep = (atts[0][0] if atts else key.n) - self.max_prev
        drop = keep - key.base
        if drop > 64 and drop * 2 > len(key.rows):
            del key.rows[:drop]
            key.base = keep

    def _emit(self, key: _Key, at: list) -> int:
        labels, mapped = at[3], []
        while labels is not None:
            mapped.append((labels[0], labels[1]))
            labels = labels[2]
        mapped.reverse()
        rows = [key.rows[s - key.base] for s, _ in mapped]
        values = []
        for _, m in self.measures:
            vi = None if m.var is None else self.var_names.index(m.var)
            picked = [r for r, (_, v) in zip(rows, mapped, strict=True) if vi is None or v == vi]
            col = None if m.column is None else self.col[m.column]
            values.append(measure_value(m, picked if col is None else [r[col] for r in picked]))
        self.found.append((key.rep, at[4], values))
        start, end = mapped[0][0], mapped[-1][0]
        if self.skip == "past_last_row":
            return end + 1
        if self.skip == "to_next_row":
            return start + 1
        vi = self.var_names.index(self.skip_var)
        hits = [s for s, v in mapped if v == vi]
        word = "FIRST" if self.skip == "to_first" else "LAST"
        if not hits:
            raise InputError(f"AFTER MATCH SKIP TO {word} {self.skip_var}: the match ending at time {at[4]} "
                             f"maps no row to {self.skip_var}")  # fmt: skip
        target = hits[0] if self.skip == "to_first" else hits[-1]
        if target == start:
            raise InputError(f"AFTER MATCH SKIP TO {word} {self.skip_var}: the match ending at time {at[4]} would "
                             "be searched again from its first row (an endless loop)")  # fmt: skip
        return target

    # -- messages ---------------------------------------------------------------------------------
    def on_batch(self, batch: EventBatch) -> None:
        batch = batch.compact()
        if not batch.points:  # an end edge closes an earlier event's lifetime: it is no event of its own
            ends = batch.other < batch.sync
            if ends.any():
                batch = batch.take(np.flatnonzero(~ends))
        n = len(batch)
        if n == 0:
            return
        self.in_types = {f: batch.columns[f].type for f in self.fields}
        self.ref_types = self._types()
        if batch.key is None:
            gids = np.zeros(n, np.int64)
        else:
            if self.keys is None:
                self.keys = KeyIndex(tuple(batch.key.type[i].name for i in range(batch.key.type.num_fields)))
            gids = self.keys.ids(batch.key)
        local = [None if c is None or c.refs else c.mask(batch) for c in self.conds]
        startable = self._startable(local, n)
        # keys never interact: take each key's events in order (a stable sort by key, gathered once so
        # that the loop reads memory in order), jumping over the events of a key with no partial match
        # that start nothing (unless PREV may read them): most events then cost no Python step
        order = np.argsort(gids, kind="stable")
        ordered = gids[order]
        bounds = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), n]
        startable = startable[order]
        candidates = np.where(startable, np.arange(n), n)
        next_candidate = np.minimum.accumulate(candidates[::-1])[::-1].tolist()
        local = [None if m is None else m[order].tolist() for m in local]
        by_key = batch.take(order)
        cols = [by_key.columns[f].to_pylist() for f in self.fields]
        times = by_key.sync.tolist()
        ordered, startable, first = ordered.tolist(), startable.tolist(), order[np.array(bounds[:-1])].tolist()
        skip_idle = not self.max_prev
        state = self.state
        for r, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            g = ordered[lo]
            key = state.get(g)
            if key is None:
                key = state[g] = _Key(self._rep(batch, first[r]))
            p = lo
            while p < hi:
                if skip_idle and not key.attempts:
                    p = next_candidate[p]
                    if p >= hi:
                        break
                self._on_event(key, tuple([c[p] for c in cols]), times[p], p, local, startable[p])
                p += 1
        times = batch.sync.tolist()
        self.now = max(self.now, times[-1])
        self._advance(self.now)

    def _types(self) -> list[dict]:
        """Per variable, the type of each reference column its condition reads."""
        return [
            {f"__ref{k}": pa.bool_() if r.column is None else self.in_types[r.column] for k, r in enumerate(c.refs)}
            if c is not None
            else {}
            for c in self.conds
        ]

    def _rep(self, batch: EventBatch, i: int) -> int:
        one = batch.slice(i, i + 1)
        one = EventBatch(one.sync, None, {}, key=one.key, hash=one.hash)
        self.reps = one if self.reps is None else concat_batches([self.reps, one])
        return len(self.reps) - 1

    def _advance(self, progress: int) -> None:
        """Partial matches ``within`` cannot extend past ``progress`` die; release what is final."""
        bound = progress
        for key in self.state.values():
            if not key.attempts:
                continue
            if self.within is not None:
                for at in key.attempts:
                    if at[2] and at[1] + self.within <= progress:
                        at[2] = []
                self._settle(key)
            for at in key.attempts:
                if at[3] is not None and at[4] < bound:
                    bound = at[4]
        self._flush_found()
        released = self.out.release(bound)
        if released is not None:
            self.emit(released)
        return bound

    def _flush_found(self) -> None:
        if not self.found:
            return
        reps, found = self.reps, self.found
        self.found = []
        sync = np.array([t for _, t, _ in found], np.int64)
        cols = {}
        for j, f in enumerate(self.out_schema):
            cols[f.name] = pa.array([vals[j] for _, _, vals in found], type=f.type)
        idx = np.array([r for r, _, _ in found], np.int64)
        key = None if reps is None or reps.key is None else reps.take(idx)
        other = None if self.lifetime == "point" else np.full(len(sync), INFINITY, np.int64)
        batch = EventBatch(sync, other, cols, key=None if key is None else key.key,
                           hash=None if key is None else key.hash)  # fmt: skip
        self.out.push(batch)

    def on_punctuation(self, time: int) -> None:
        self.now = max(self.now, time)
        bound = self._advance(self.now)
        if bound > self.punctuated:
            self.punctuated = bound
            self.emit_punctuation(bound)

    def on_completed(self) -> None:
        for key in self.state.values():
            for at in key.attempts:
                at[2] = []
            self._settle(key)
        self._flush_found()
        released = self.out.release(INFINITY)
        if released is not None:
            self.emit(released)
        self.emit_completed()

    # -- state ------------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        keys = {
            g: (k.rows, k.base, k.n, k.next_start, [list(a) for a in k.attempts], k.rep) for g, k in self.state.items()
        }
        return copy.deepcopy({
            "keys": None if self.keys is None else self.keys.snapshot(),
            "key_names": None if self.keys is None else list(self.keys.names),
            "reps": None if self.reps is None else self.reps.to_record_batch(with_key=True),
            "state": keys,
            "out": self.out.snapshot(),
            "now": self.now,
            "punctuated": self.punctuated,
        })  # fmt: skip

    def restore(self, state: dict) -> None:
        state = copy.deepcopy(state)
        self.keys = None
        if state["keys"] is not None:
            self.keys = KeyIndex(tuple(state["key_names"]))
            self.keys.restore(state["keys"])
        self.reps = None if state["reps"] is None else EventBatch.from_record_batch(state["reps"])
        self.state = {}
        for g, (rows, base, n, nxt, attempts, rep) in state["state"].items():
            k = _Key(rep)
            k.rows, k.base, k.n, k.next_start = rows, base, n, nxt
            k.attempts = deque(attempts)
            self.state[g] = k
        self.out.restore(state["out"])
        self.now, self.punctuated = state["now"], state["punctuated"]

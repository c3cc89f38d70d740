"""Running a batch of transactions: compute mode (operations from events, columnar) then state access.

Compute mode evaluates, over all events of the batch at once, which events issue each operation
template (``when``), the keys, and checks them: a key outside its table, a value of the wrong
type or an expression that cannot be evaluated is an error naming the event (its position in the
stream and its time) raised before any state changes. State access runs the scheduler's waves of
groups in the compiled kernel (``tidal.tx.codegen``) on ``workers`` threads; a division by zero
inside it restores every record the batch wrote and names the first event (in timestamp order)
whose operation divided by zero. Either way no transaction is left half-applied: the tables hold
exactly the transactions of the batches before.
"""

from __future__ import annotations

import time as _time

import numba
import numpy as np
import pyarrow as pa

from ..core.errors import PlanError
from ..expr.kernels import Evaluator
from . import codegen, fused, gather, locked, pipeline, postfuse, runs, schedule, split
from .errors import TransactionError
from .table import Table
from .trace import READ, OpTemplate, S, V

# a column's kind by its Arrow type id (one dict lookup a column: every batch asks)
_KIND_OF_TYPE_ID = {pa.bool_().id: "b"}
_KIND_OF_TYPE_ID.update({t().id: "i" for t in (pa.int8, pa.int16, pa.int32, pa.int64)})
_KIND_OF_TYPE_ID.update({t().id: "i" for t in (pa.uint8, pa.uint16, pa.uint32, pa.uint64)})
_KIND_OF_TYPE_ID.update({t().id: "f" for t in (pa.float16, pa.float32, pa.float64)})


def _kind_of_array(col: pa.Array) -> str:
    """'b' boolean, 'i' integer, 'f' floating point, 's' anything else."""
    return _KIND_OF_TYPE_ID.get(col.type.id, "s")


SERIAL_WALKS = ("serial", "pipeline")  # schedulers whose state access is the serial walk

# the kernels of compiled transactions, by ``Engine._fingerprint``; the attributes they are kept in
_BUILT: dict[str, dict] = {}
_BUILT_ATTRS = (
    "type_errors", "event_args", "_wave", "decomposer", "owner_ok", "fused_kernels", "serial_events",
    "split_events", "regions", "t_write", "t_int", "read_rows", "serial_spec",
)  # fmt: skip


class Engine:
    """The compiled transactions of one ``transact`` node: tables' storage, kernel, statistics."""

    def __init__(self, templates: list[OpTemplate], scheduler: str, interval: int, workers: int, partitions: int):
        self.templates = templates
        self.scheduler = scheduler
        self.interval = interval
        self.workers = workers
        self.partitions = partitions
        self.tables: list[Table] = []
        for t in templates:
            for table in [t.table] + ([t.source[0]] if t.source else []):
                if all(table is not x for x in self.tables):
                    self.tables.append(table)
        self.rec_base, self.cell_base, n_rec, ni, nf = {}, {}, 0, 0, 0
        for table in self.tables:
            self.rec_base[id(table)] = n_rec
            n_rec += table.size
            for c, a in table.columns.items():
                if a.dtype.kind == "i":
                    self.cell_base[(id(table), c)] = (True, ni)
                    ni += table.size
                else:
                    self.cell_base[(id(table), c)] = (False, nf)
                    nf += table.size
        self.icells = np.zeros(ni, np.int64)
        self.fcells = np.zeros(nf, np.float64)
        self.views: dict = {}
        for table in self.tables:
            for c in table.columns:
                is_int, base = self.cell_base[(id(table), c)]
                self.views[(id(table), c)] = (self.icells if is_int else self.fcells)[base : base + table.size]
        self.rec_shift = np.array(
            [self.rec_base[id(t.table)] - self.cell_base[(id(t.table), t.column)][1] for t in templates], np.int64
        )
        self.read_slots = {t.name: k for k, t in enumerate(templates) if t.kind == READ}
        # per read: issued by every event (no when): the serial walk sets no validity bits for it
        self.read_always = [templates[k].when is None for k in self.read_slots.values()]
        self.slot = np.full(len(templates), -1, np.int64)
        for s, k in enumerate(self.read_slots.values()):
            self.slot[k] = s
        self.n_rec = n_rec  # records of all tables: the units of chains' grouped layout and of lock
        self.kernel = None
        self.kernel_kinds = None
        self.built_key = None
        self._batch_kinds: tuple = ((), ())  # the last batch's (field names, kinds): its kernels are made
        self.type_errors: dict[int, str] = {}
        pipeline.enter(self)  # a user of its tables until its operator completes (``pipeline.alone``)
        self.stats = {"events": 0, "batches": 0, "intervals": 0, "operations": 0, "chains": 0, "groups": 0}
        self.stats.update({"waves": 0, "largest_group": 0, "aborted": 0, "compute_s": 0.0, "state_access_s": 0.0})

    # -- storage ------------------------------------------------------------------------------
    def bind(self) -> None:
        """Make every table's columns views of this engine's storage (copying the current values in
        when another engine or the user replaced them)."""
        for table in self.tables:
            for c in list(table.columns):
                view = self.views[(id(table), c)]
                if table.columns[c] is not view:
                    view[:] = table.columns[c]
                    table.columns[c] = view

    # -- compiling ----------------------------------------------------------------------------
    def _compile(self, kinds: dict[str, str]) -> None:
        """The kernels for events of these field kinds: made once per process for each set of
        transactions (a new query over the same access function, tables' shapes and kinds finds
        them in ``_BUILT``: generating their source costs up to 1 ms a query)."""
        signature = tuple(sorted(kinds.items()))
        if self.kernel_kinds == signature:
            return
        key = self._fingerprint(signature)
        self.built_key = key  # what ``tidal.tx.postfuse`` keeps its kernels by (None: not kept)
        made = _BUILT.get(key) if key is not None else None
        if made is None:
            self._build(kinds)
            made = {a: getattr(self, a) for a in _BUILT_ATTRS}
            if key is not None:
                _BUILT[key] = made
        for a, v in made.items():
            setattr(self, a, v)
        self.kernel = None
        self.kernel_kinds = signature

    def _fingerprint(self, signature) -> str | None:
        """Everything the kernels are made from, as text: the scheduler, the kinds, and per template its
        expressions (dataclass reprs, complete) and the places of its cells; None when some part is
        known only by identity (a Python function's repr, whose address a later one may reuse)."""

        def place(table, col):
            at = self.cell_base[(id(table), col)]
            return (table.name, col, table.size, table.columns[col].dtype.str, at, self.rec_base[id(table)])

        parts: list = [self.scheduler, signature, len(self.icells), len(self.fcells)]
        for t in self.templates:
            src = None if t.source is None else (place(t.source[0], t.source[2]), repr(t.source[1]))
            exprs = (repr(t.key), repr(t.when), repr(t.value), repr(t.condition))
            parts.append((t.seq, t.kind, place(t.table, t.column), exprs, src, t.name))
        text = repr(parts)
        return None if " at 0x" in text else text

    def _build(self, kinds: dict[str, str]) -> None:
        events: dict[str, str] = {}
        target_int, source_int = [], []
        self.type_errors = {}
        for k, t in enumerate(self.templates):
            tint = t.table.columns[t.column].dtype.kind == "i"
            target_int.append(tint)
            sint = None if t.source is None else t.source[0].columns[t.source[2]].dtype.kind == "i"
            source_int.append(sint)
            lam = dict(kinds)
            lam[V] = "i" if tint else "f"
            if sint is not None:
                lam[S] = "i" if sint else "f"
            for node in (t.value, t.condition):
                if node is None:
                    continue
                for col in node.columns():
                    if col.startswith("e.") and kinds.get(col) == "s":
                        self.type_errors[k] = f"field {col[2:]!r} is not a number"
                if k in self.type_errors:
                    continue
                kind = codegen.kind_of(node, lam)
                if node is t.value and tint and kind == "f":
                    self.type_errors[k] = f"a float value ({node}) for the int64 column {t.table.name}.{t.column}"
            if k not in self.type_errors:
                for node in (t.value, t.condition):
                    for col in [] if node is None else sorted(node.columns()):
                        if col.startswith("e.") and col not in events:
                            events[col] = f"E{len(events)}"
        live = [
            t if k not in self.type_errors else OpTemplate(t.seq, READ, t.table, t.column, t.key)
            for k, t in enumerate(self.templates)
        ]
        self.event_args = events
        # the waves' kernel (chains whose operations read other records, in owner-list mode): made when
        # first needed, as generating it costs more than many a run
        self.kernel = None
        self._wave = lambda: codegen.load(codegen.kernel_source(live, target_int, source_int, events))
        places = []
        for t in self.templates:
            target = (self.cell_base[(id(t.table), t.column)][1], self.rec_base[id(t.table)], t.table.size)
            src = None
            if t.source is not None:
                st, _, sc = t.source
                src = (self.cell_base[(id(st), sc)][1], self.rec_base[id(st)], st.size)
            places.append((target, src))
        made = None if self.type_errors else codegen.decompose_source(self.templates, kinds, places)
        self.decomposer = None if made is None else (codegen.load_decompose(made[0]), made[1])
        slots = [int(x) for x in self.slot]
        self.owner_ok = all(
            t.source is None or (t.source[0] is t.table and str(t.source[1]) == str(t.key)) for t in self.templates
        )
        grid_walk = fused.serial_source(live, target_int, source_int, slots, events)
        self.fused_kernels = {"serial": fused.load_serial(grid_walk)}
        if self.scheduler in ("lock", "pat"):  # the same transactions' code, handed on by ordered locks
            self.fused_kernels["locked"] = locked.load(locked.source(grid_walk, fused._args(events)))
        if self.scheduler == "chains":  # components of each interval on threads (tidal.tx.split)
            self.fused_kernels["split"] = split.load(split.source(grid_walk, split.GRID_HEAD + fused._args(events)))
        self.serial_events = None
        self.serial_spec = None  # what the serial walk from the events is made of (``tidal.tx.postfuse``)
        self.read_rows = list(range(len(self.read_slots)))  # the validity bits each read uses (its own)
        self.split_events = None
        if made is not None:  # the serial walk straight from the events (no grids)
            every = dict(events)
            for col in made[1]:
                every.setdefault(col, f"E{len(every)}")
            walk = fused.serial_source(live, target_int, source_int, slots, every, places)
            packed = fused.serial_source(live, target_int, source_int, slots, every, places, bits=True)
            self.serial_events = (fused.load_serial(packed), sorted(every, key=lambda c: int(every[c][1:])))
            self.serial_spec = (live, target_int, source_int, slots, every, places)
            self.read_rows = fused.read_bit_rows(live, slots, every)
            if self.scheduler == "chains":
                head = split.EVENTS_HEAD + fused._args(every)
                self.fused_kernels["split_events"] = split.load(split.source(walk, head))
                plan = split.plan_source(live, kinds, places, every, len(self.icells))
                self.split_events = (split.load_plan(plan), self.serial_events[1])
        self.regions = None
        if self.scheduler == "chains" and self.owner_ok:
            self.fused_kernels["owner"] = fused.load_owner(
                fused.owner_source(live, target_int, source_int, slots, events)
            )
            owners = {"shift": fused.shift(len(self.templates)), "slots": slots}
            made = None if self.type_errors else codegen.decompose_source(self.templates, kinds, places, owners)
            self.regions = None if made is None else (codegen.load_decompose(made[0]), made[1])
        self.t_write = np.array([t.kind != READ for t in live], np.uint8)
        self.t_int = np.array(target_int, np.uint8)

    # -- one batch ----------------------------------------------------------------------------
    def _prepare(self, columns: dict[str, pa.Array]) -> dict[str, pa.Array]:
        """The tables bound, the kernels for this batch's field kinds made; the columns as ``e.<field>``."""
        if getattr(self, "box", None) is not None:
            self.box["last"] = self
        self.bind()
        cols = {"e." + k: v for k, v in columns.items()}
        kinds = tuple(_KIND_OF_TYPE_ID.get(v.type.id, "s") for v in cols.values())
        if (tuple(cols), kinds) != self._batch_kinds:  # the kernels for these kinds (once per schema)
            self._compile(dict(zip(cols, kinds, strict=True)))
            self._batch_kinds = (tuple(cols), kinds)
        return cols

    def run_post(self, columns: dict[str, pa.Array], post, n: int) -> dict[str, pa.Array] | None:
        """The batch's transactions and ``post``'s output in one serial walk (``tidal.tx.postfuse``), or
        None (nothing run, nothing changed) where that does not apply: then ``run`` and ``post``."""
        t0 = _time.perf_counter()
        cols = self._prepare(columns)
        self._nthreads = max(1, min(self.workers, numba.config.NUMBA_NUM_THREADS))
        small = n * len(self.templates) < runs.PARALLEL_FROM
        serial = self.scheduler in SERIAL_WALKS or (self.scheduler == "chains" and (self._nthreads == 1 or small))
        if not serial:
            return None
        done = postfuse.run(self, post, columns, cols, n)
        if done is not None:
            self.stats["state_access_s"] += _time.perf_counter() - t0
        return done

    def prepare(self, columns: dict[str, pa.Array], post, n: int):
        """``pipeline``: the batch's serial walk made ready (``tidal.tx.pipeline.prepare``; the tables
        not touched, so while the batch before walks); None where it does not apply (then
        ``run_post`` or ``run``, which walk it serially). ``pipeline.start`` starts it."""
        if getattr(self, "box", None) is not None:
            self.box["last"] = self
        cols = {"e." + k: v for k, v in columns.items()}
        kinds = tuple(_KIND_OF_TYPE_ID.get(v.type.id, "s") for v in cols.values())
        if (tuple(cols), kinds) != self._batch_kinds:  # the kernels for these kinds (once per schema)
            self._compile(dict(zip(cols, kinds, strict=True)))
            self._batch_kinds = (tuple(cols), kinds)
        self._nthreads = max(1, min(self.workers, numba.config.NUMBA_NUM_THREADS))
        if not pipeline.alone(self):
            return None
        return pipeline.prepare(self, columns, cols, n, post)

    def run(self, columns: dict[str, pa.Array], sync: np.ndarray, position: int):
        """Run the transactions of ``len(sync)`` events; returns (committed, {read name: values})."""
        t0 = _time.perf_counter()
        n = len(sync)
        cols = self._prepare(columns)
        sourced = any(t.source is not None for t in self.templates)

        def grids():
            made = self._decompose_compiled(cols, n, sourced)
            return made if made is not None else self._decompose(cols, n, sync, position, sourced)

        self._nthreads = max(1, min(self.workers, numba.config.NUMBA_NUM_THREADS))
        fused_path = self.scheduler in SERIAL_WALKS or (self.scheduler == "chains" and self.owner_ok)
        small = n * len(self.templates) < runs.PARALLEL_FROM
        if fused_path and (self.scheduler in SERIAL_WALKS or self._nthreads == 1 or small):
            done = runs.serial_from_events(self, cols, n)  # one thread's kernel: no thread count to set
            if done is not None:
                self.stats["state_access_s"] += _time.perf_counter() - t0
                return done
        self._threads()
        if self.scheduler == "chains" and self._nthreads > 1 and not small and split.CHAINS == "components":
            done = runs.split_run(self, cols, n, sync, position, grids)
            self.stats["state_access_s"] += _time.perf_counter() - t0
            return done
        if fused_path and self.scheduler == "chains" and self._nthreads > 1 and not small:
            done = runs.owner_from_events(self, cols, n, sync, position, grids)
            if done is not None:
                self.stats["state_access_s"] += _time.perf_counter() - t0
                return done
        issued, cell2d, src2d, srec2d = grids()
        if self.scheduler in ("lock", "pat"):
            args = [self._event_array(cols, name, n, position, sync) for name in self.event_args]
            done = locked.run(self, (issued, cell2d, src2d, srec2d), args, n)
            if done is None:  # a division by zero: the serial walk names the first one
                return runs.fused_run(self, issued, cell2d, src2d, args, n, sync, position, serial_only=True)
            aborted, out_i, out_f, m, per_thread = done
            st = self.stats
            st["locked_walks"] = st.get("locked_walks", 0) + 1
            st["thread_share"] = max(st.get("thread_share", 0.0), float(per_thread.max() / max(1, n)))
            st["groups"] += self._nthreads
            st["waves"] += 1
            st["largest_group"] = max(st["largest_group"], m)
            self.stats["state_access_s"] += _time.perf_counter() - t0
            return runs._finish(self, aborted, out_i, out_f, runs._read_rows(self, issued), n, m)
        if fused_path:
            args = [self._event_array(cols, name, n, position, sync) for name in self.event_args]
            t1 = _time.perf_counter()
            committed, reads = runs.fused_run(self, issued, cell2d, src2d, args, n, sync, position)
            self.stats["compute_s"] += t1 - t0
            self.stats["state_access_s"] += _time.perf_counter() - t1
            return committed, reads
        op_ev, op_tmpl, op_cell, op_rec, op_src, op_srec = gather.operations(
            issued, cell2d, src2d, srec2d, self.rec_shift, sourced
        )
        if len(op_ev) == 0:
            types = {k: pa.int64() if self.t_int[k] else pa.float64() for k in self.read_slots.values()}
            return np.ones(n, bool), {name: pa.nulls(n, types[k]) for name, k in self.read_slots.items()}
        conds = [k for k, t in enumerate(self.templates) if t.condition is not None]
        ev_cond = issued[:, conds].any(axis=1) if conds else np.zeros(n, np.bool_)
        # here only chains whose operations read other records (serial, lock, pat and chains by
        # owner lists returned above): groups of dependent chains per interval, in waves
        op_ev, op_tmpl, op_cell, op_src, group_ptr, wave_ptr, chains = schedule.chain_layout(
            op_ev, op_tmpl, op_cell, op_src, op_rec, op_srec, ev_cond, self.interval, self.n_rec, self._nthreads
        )
        self.stats["chains"] += int(chains)
        order = np.arange(len(op_ev), dtype=np.int64)
        t1 = _time.perf_counter()
        m = len(op_ev)
        saved = (self.icells.copy(), self.fcells.copy())  # what an error restores
        old_i, old_f = np.empty(m, np.int64), np.empty(m, np.float64)
        rd_i, rd_f = np.empty(m, np.int64), np.empty(m, np.float64)
        aborted = np.zeros(n, np.uint8)
        op_err = np.zeros(m, np.uint8)
        g_err = np.zeros(len(group_ptr) - 1, np.bool_)
        args = [self._event_array(cols, name, n, position, sync) for name in self.event_args]
        if self.kernel is None:
            self.kernel = self._wave()
        stopped = self.kernel(
            wave_ptr, self._nthreads, group_ptr, order, op_ev, op_tmpl, op_cell, op_src, self.t_write, self.t_int,
            self.icells, self.fcells, old_i, old_f, rd_i, rd_f, aborted, op_err, g_err, *args,
        )  # fmt: skip
        if stopped:
            self.icells[:], self.fcells[:] = saved
            bad = np.flatnonzero(op_err)
            j = bad[np.argmin(op_ev[bad] * len(self.templates) + op_tmpl[bad])]
            i = int(op_ev[j])
            raise TransactionError(
                f"transact: event {position + i} (time {int(sync[i])}): division by zero in "
                f"{self.templates[int(op_tmpl[j])].describe()}"
            )
        committed = aborted == 0
        reads = {}
        if self.read_slots:
            nr = len(self.read_slots)
            out_i, out_f = np.empty((nr, n), np.int64), np.empty((nr, n), np.float64)
            present = np.zeros((nr, n), np.bool_)
            gather.reads(op_ev, op_tmpl, rd_i, rd_f, self.slot, self.t_int, aborted, out_i, out_f, present)
            for s, (name, k) in enumerate(self.read_slots.items()):
                values = out_i[s] if self.t_int[k] else out_f[s]
                ok = present[s]
                reads[name] = pa.array(values, mask=None if ok.all() else ~ok)
        st = self.stats
        st["events"] += n
        st["batches"] += 1
        st["operations"] += m
        st["groups"] += len(group_ptr) - 1
        st["waves"] += len(wave_ptr) - 1
        st["largest_group"] = max(st["largest_group"], int(np.diff(group_ptr).max()))
        st["aborted"] += int(n - committed.sum())
        st["intervals"] += (n + self.interval - 1) // self.interval
        t2 = _time.perf_counter()
        st["compute_s"] += t1 - t0
        st["state_access_s"] += t2 - t1
        return committed, reads

    def _decompose_compiled(self, cols, n: int, sourced: bool):
        """Compute mode in the compiled kernel, or None (not compilable, nulls, or an error to name)."""
        if self.decomposer is None:
            return None
        fn, names = self.decomposer
        if any(cols[c].null_count for c in names):
            return None
        nk = len(self.templates)
        issued = np.zeros((n, nk), np.bool_)
        cell2d = np.empty((n, nk), np.int64)
        src2d = np.full((n, nk) if sourced else (1, nk), -1, np.int64)
        srec2d = np.full((n, nk) if sourced else (1, nk), -1, np.int64)
        err = np.zeros(n, np.uint8)
        fn(n, issued, cell2d, src2d, srec2d, err, *(cols[c].to_numpy(zero_copy_only=False) for c in names))
        return None if err.any() else (issued, cell2d, src2d, srec2d)

    def _decompose(self, cols, n: int, sync, position: int, sourced: bool):
        """Compute mode with numpy: which events issue each operation, and the cells; errors named."""
        ev = Evaluator(cols, n)
        nk = len(self.templates)
        errors: list[tuple[int, int, str]] = []
        issued = np.zeros((n, nk), np.bool_)
        cell2d = np.zeros((n, nk), np.int64)
        src2d = np.full((n, nk) if sourced else (1, nk), -1, np.int64)
        srec2d = np.full((n, nk) if sourced else (1, nk), -1, np.int64)
        for k, t in enumerate(self.templates):
            idx = slice(None) if t.when is None else self._mask(t.when, ev, cols, n, errors, k)
            if idx is None or (not isinstance(idx, slice) and len(idx) == 0):
                continue
            if k in self.type_errors:
                first = 0 if isinstance(idx, slice) else int(idx[0])
                errors.append((first, k, f"{t.describe()}: {self.type_errors[k]}"))
                continue
            rec = self._records(t.table, t.key, ev, cols, n, idx, errors, k)
            if rec is None:
                continue
            if t.source is not None:
                src_rec = self._records(t.source[0], t.source[1], ev, cols, n, idx, errors, k)
                if src_rec is None:
                    continue
                src2d[idx, k] = self.cell_base[(id(t.source[0]), t.source[2])][1] + src_rec
                srec2d[idx, k] = src_rec + self.rec_base[id(t.source[0])]
            cell2d[idx, k] = self.cell_base[(id(t.table), t.column)][1] + rec
            issued[idx, k] = True
        if errors:
            i, _, msg = min(errors)
            raise TransactionError(f"transact: event {position + i} (time {int(sync[i])}): {msg}")
        return issued, cell2d, src2d, srec2d

    def _threads(self) -> None:
        self._nthreads = max(1, min(self.workers, numba.config.NUMBA_NUM_THREADS))
        numba.set_num_threads(self._nthreads)

    # -- compute-mode helpers -------------------------------------------------------------------
    def _eval(self, node, ev: Evaluator, cols, n: int, errors, k: int, truth: bool = False):
        try:
            value = ev.truth(node) if truth else ev.eval(node)
        except Exception:
            value = None
        if isinstance(value, pa.ChunkedArray):
            value = value.combine_chunks()
        if value is not None and not (isinstance(value, pa.Array) and value.null_count):
            return value
        for i in range(n):  # find the row that cannot be evaluated
            one = Evaluator({c: a.slice(i, 1) for c, a in cols.items()}, 1)
            try:
                v = one.truth(node) if truth else one.eval(node)
                if isinstance(v, pa.Array) and v.null_count:
                    raise ValueError("null")
            except Exception as exc:
                errors.append((i, k, f"cannot evaluate {node}: {exc}"))
                return None
        raise PlanError(f"transact: cannot evaluate {node}")

    def _mask(self, node, ev, cols, n, errors, k):
        value = self._eval(node, ev, cols, n, errors, k, truth=True)
        if value is None:
            return None
        if isinstance(value, bool | np.bool_):
            return np.arange(n) if value else np.zeros(0, np.int64)
        return np.flatnonzero(np.asarray(value, dtype=bool))

    def _records(self, table: Table, key, ev, cols, n, idx, errors, k):
        value = self._eval(key, ev, cols, n, errors, k)
        if value is None:
            return None
        if isinstance(value, pa.Array):
            value = value.to_numpy(zero_copy_only=False)
        value = np.broadcast_to(np.asarray(value), (n,))[idx]
        where = np.arange(n)[idx]
        if table.keys is None and value.dtype.kind not in "iu":
            errors.append((int(where[0]), k, f"key {_py(value[0])!r} of table {table.name!r} is not an integer"))
            return None
        rec = table.index_of(value)
        bad = np.flatnonzero(rec < 0)
        if len(bad):
            size = f"size {table.size}" if table.keys is None else f"{table.size} keys"
            msg = f"key {_py(value[bad[0]])!r} is outside table {table.name!r} ({size})"
            errors.append((int(where[bad[0]]), k, msg))
            return None
        return rec

    def _event_array(self, cols, name: str, n: int, position: int, sync) -> np.ndarray:
        col = cols[name]
        if col.null_count:
            i = int(np.flatnonzero(~np.asarray(col.is_valid()))[0])
            raise TransactionError(f"transact: event {position + i} (time {int(sync[i])}): field {name[2:]!r} is null")
        return col.to_numpy(zero_copy_only=False)

    def describe(self) -> str:
        st = self.stats
        text = describe_setup(self.scheduler, self.interval, self.workers, self.partitions)
        if st["batches"] and st.get("split_walks"):  # components of intervals on threads (tidal.tx.split)
            text += (
                f"; last run: {st['events']} events, {st['intervals']} intervals, {st['operations']} operations "
                f"({st['split_walks']} runs split into {st['components']} components, largest "
                f"{st['largest_component']} operations, on {self._nthreads} threads, largest share "
                f"{st['thread_share']:.0%} of the events), {st['aborted']} aborted; "
                f"state access {st['state_access_s']:.3f} s"
            )
            if st.get("phases"):
                text += " (CPU: " + ", ".join(f"{k} {v:.3f} s" for k, v in st["phases"].items()) + ")"
        elif st["batches"] and (st.get("lists") or st.get("serial_walks") or st.get("locked_walks")):  # fused walks
            how = (
                f"{st['lists']} owner lists in {st['batches']} runs, {st['waves']} rounds "
                f"({st.get('rewalked', 0)} operations walked again, {st.get('serial_rest', 0)} events serially)"
                if st.get("lists")
                else f"{st.get('serial_walks', 0)} runs walked serially"
            )
            if st.get("pipelined"):  # tidal.tx.pipeline
                how += f", {st['pipelined']} on the walker thread while the operator went on"
            if st.get("post_fused"):  # tidal.tx.postfuse
                how += f", {st['post_fused']} of them with the post-process in the walk"
            if st.get("locked_walks"):
                unit = "records" if self.scheduler == "lock" else "partitions"
                how = f"{st['locked_walks']} runs on {self._nthreads} threads holding {unit} in timestamp order"
            text += (
                f"; last run: {st['events']} events, {st['intervals']} intervals, {st['operations']} operations "
                f"({how}, largest list {st['largest_group']}), {st['aborted']} aborted; "
                f"compute {st['compute_s']:.3f} s, state access {st['state_access_s']:.3f} s"
            )
            if st.get("phases"):  # CPU seconds, every thread, per phase of the runs (tidal.tx.runs)
                text += " (CPU: " + ", ".join(f"{k} {v:.3f} s" for k, v in st["phases"].items()) + ")"
        elif st["batches"]:
            mean = st["operations"] / max(1, st["groups"])
            text += (
                f"; last run: {st['events']} events, {st['intervals']} intervals, {st['operations']} operations, "
                f"{st['chains']} chains, {st['groups']} groups in {st['waves']} waves (mean {mean:.1f} operations, "
                f"largest {st['largest_group']}), {st['aborted']} aborted; compute {st['compute_s']:.3f} s, "
                f"state access {st['state_access_s']:.3f} s"
            )
        return text


def describe_setup(scheduler: str, interval: int, workers: int, partitions: int) -> str:
    """What an engine that has not run yet says about itself (no engine is built to say it)."""
    text = f"{scheduler}, interval {interval}, {workers} worker(s)"
    return text + (f", {partitions} partitions" if scheduler == "pat" else "")


def _py(value):
    return value.item() if isinstance(value, np.generic) else value

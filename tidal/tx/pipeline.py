"""The ``pipeline`` scheduler: the serial walk of one batch on a second thread while the first goes on.

State access is the serial walk (``tidal.tx.runs.serial_begin``, or with the post-process in it,
``tidal.tx.postfuse.begin``), one batch at a time, in order, so the tables, reads and aborts are
the serial ones. What changes is when: the operator starts a batch's walk on a worker thread (a
``nogil`` kernel) and returns, so that the thread that delivered the batch reads the next one
(ingress), and the operators downstream process the previous one, while the walk runs. The batch is
*landed* (its output built and emitted) when the next batch arrives: once its walk has ended, the
next batch's walk starts (one walk at a time, in order), then the batch's output is built and
emitted (it reads the batch's own arrays, not the tables) while that walk runs; or at a
punctuation, flush or end of input (before it is forwarded).

Each ``Transact`` operator holds at most one batch in flight, and only when no other unfinished
query's ``transact`` uses one of its tables (``alone``; else it walks as ``serial``). Its checkpoint, taken in between,
waits for the walk and stores the tables as they were before the batch, and the batch among the
buffered events, so a restored query walks it again; a stopped query's tables can hold one batch
more than its output. An error in the walk (a key outside its table, a division by zero) puts the
tables back and lands the batch by the general path, which names the event.

What it can give (Amdahl over two threads, CPU ns per event of the serial query, ``bench/tx_phases.py``):
a query costs ``S + W``, the walk ``W`` and the rest ``S`` (Python per batch, ingress, output,
operators downstream); overlapped, ``max(S, W)`` plus what cannot overlap (per query: tracing,
planning). Its CPU time is that of the serial walk plus the hand-over (a future per batch).
"""

from __future__ import annotations

import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

from . import postfuse, runs

_LOCK = threading.Lock()
_WALKER: ThreadPoolExecutor | None = None  # one thread walks for every pipelined operator: walks of
# different queries are independent and each operator waits only for its own


# per table, the engines of the queries built over it and not finished: a batch walks ahead of the
# operator's output only when its engine is the one user of its tables (another ``transact`` of the
# same query would read them while the walk runs, before the serial order lets it)
_USERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def enter(engine) -> None:
    """``engine`` (built for a query) uses its tables until ``leave``."""
    with _LOCK:
        for t in engine.tables:
            _USERS.setdefault(t, weakref.WeakSet()).add(engine)


def leave(engine) -> None:
    with _LOCK:
        for t in engine.tables:
            users = _USERS.get(t)
            if users is not None:
                users.discard(engine)


def alone(engine) -> bool:
    """No other unfinished query's engine uses one of ``engine``'s tables."""
    with _LOCK:
        return all(len(_USERS.get(t, ())) <= 1 for t in engine.tables)


def _walker() -> ThreadPoolExecutor:
    global _WALKER
    with _LOCK:
        if _WALKER is None:
            _WALKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidal-tx-walk")
        return _WALKER


def _walk(fn, args, started: threading.Event):
    started.set()
    t0 = time.thread_time()
    r = fn(*args)  # releases the interpreter lock (a nogil kernel) once its arguments are read
    return r, time.thread_time() - t0


class Flight:
    """One batch's walk, started: ``land()`` waits for it and gives ``("post", payload)``, ``("run",
    (committed, reads))`` or None (an error: the tables are as before the batch)."""

    def __init__(self, kind: str, land, saved, future: Future, cells):
        self.kind, self._land, self.saved, self.future = kind, land, saved, future
        self.engine_cells = cells  # the engine's int and float cells (what ``saved`` copies)

    def wait(self) -> None:
        self.future.result()

    def walked(self) -> bool:
        """Waits for the walk: True when it ran to the end (False: ``land`` puts the tables back)."""
        return self.future.result()[0] == -1

    def undo(self) -> None:
        """The walk waited for and its effect on the tables taken back (the batch did not run)."""
        self.wait()
        self.engine_cells[0][:], self.engine_cells[1][:] = self.saved

    def land(self):
        r, cpu = self.future.result()
        done = self._land(r, cpu)
        return None if done is None else (self.kind, done)


def prepare(engine, columns, cols, n: int, post):
    """The batch's serial walk made ready without reading the tables (so while the batch before still
    walks): ``(kind, kernel, args, land, saved)``; None where the serial walk from the events does
    not apply (nulls, no compiled walk): the caller runs the batch as ``serial`` would."""
    begun = postfuse.begin(engine, post, columns, cols, n) if post is not None else None
    kind = "post"
    if begun is None:
        begun, kind = runs.serial_begin(engine, cols, n), "run"
    return None if begun is None else (kind, *begun)


def start(engine, ready) -> Flight:
    """The walk made by ``prepare`` started on the walker thread, the tables saved first (once the
    batch before has walked)."""
    kind, fn, args, land, saved = ready
    engine.bind()
    runs.save(engine, saved)
    st = engine.stats
    st["pipelined"] = st.get("pipelined", 0) + 1
    started = threading.Event()
    future = _walker().submit(_walk, fn, args, started)
    # the walker needs the interpreter lock to start its kernel: without this wait it would get it only
    # when this thread next waits (the lock changes hands every 5 ms otherwise), after the output of the
    # batch before is built, which is what should overlap the walk
    started.wait()
    return Flight(kind, land, saved, future, (engine.icells, engine.fcells))

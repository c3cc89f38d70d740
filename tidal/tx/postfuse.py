"""The post-process fused into the serial walk: each event's output made in the event's iteration.

Where no operation has a condition (nothing aborts) and every read is issued by every event (no
``when``), no read is ever null, so ``post(e, r)``'s compiled loops (``tidal.tx.operator.Post``:
a field passed on, or a numeric expression in one compiled loop over the event's fields and the
reads' columns) see exactly the values the walk reads. When every field of the post-process is of
those kinds and none can raise (no division but by a non-zero constant, no powers or shifts), the
serial walk from the events (``tidal.tx.fused.serial_source`` with ``post``) keeps each read in a
local and writes each computed field's value for the event at the end of its iteration, into an
array made for the batch: no read columns, no ``committed`` column, no second pass over the batch.
The values and types are ``Post``'s: the same expression source (``tidal.expr.jit``), the output
types ``Post``'s own plan finds. Anything else (and a key outside its table, a division by zero in
an operation: the tables are put back) runs the general path, which names the event.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa

from ..expr import jit
from ..expr.nodes import BinOp, Const
from . import fused, runs
from .trace import READ

_MADE: dict = {}  # (the engine's kernels' key, the fields, their types) -> (kernel, columns, steps)
_NONE = object()  # a plan found not to apply (kept as such)


def _cannot_raise(node) -> bool:
    for n in node.walk():
        if isinstance(n, BinOp):
            if n.op in ("**", "<<", ">>"):
                return False
            if n.op in ("/", "//", "%") and not (isinstance(n.right, Const) and n.right.value != 0):
                return False
    return True


def _plan(engine, post, columns: dict[str, pa.Array]):
    """(kernel, event columns, steps) or None. ``steps``: per output field ``(name, column)`` passed on
    or ``(name, dtype)`` computed by the kernel (in the order of its output arguments). Every batch
    asks: found by the columns' names and type ids when their types are primitive (no parameters)."""
    ids = (tuple(columns), tuple(c.type.id for c in columns.values()))
    memo = engine.__dict__.setdefault("_postfuse_ids", {})
    got = memo.get(ids)
    if got is not None and got[0] is post:
        return got[1]
    made = _find(engine, post, columns)
    if all(pa.types.is_primitive(c.type) and not pa.types.is_temporal(c.type) for c in columns.values()):
        memo[ids] = (post, made)
    return made


def _find(engine, post, columns: dict[str, pa.Array]):
    spec = engine.serial_spec
    if spec is None or post.fields is None or engine.type_errors:
        return None
    if any(t.condition is not None or (t.kind == READ and t.when is not None) for t in engine.templates):
        return None
    read_types = {name: pa.int64() if engine.t_int[k] else pa.float64() for name, k in engine.read_slots.items()}
    # kept by what the kernel is made of (no key when a part is known only by identity: then made anew)
    key = None
    if engine.built_key is not None:
        types = tuple((name, str(c.type), c.null_count == 0) for name, c in columns.items())
        key = (engine.built_key, repr(post.fields), types)
        made = _MADE.get(key)
        if made is not None:
            return None if made is _NONE else made
    r = {"committed": pa.array([], pa.bool_()), **{n: pa.array([], t) for n, t in read_types.items()}}
    cols = {**columns, **{"r." + k: v for k, v in r.items()}}
    plan = post._plan(cols)  # the general path's own plan (kept by the input types)
    made = None if plan is None else _make(engine, post, plan, cols, read_types)
    if key is not None:
        _MADE[key] = _NONE if made is None else made
    return made


def _make(engine, post, plan, cols, read_types):
    live, target_int, source_int, slots, every, places = engine.serial_spec
    every = dict(every)
    slot_of = {name: s for s, name in enumerate(engine.read_slots)}
    outs, lines, steps = [], [], []
    for (name, node), (_, step) in zip(post.fields, plan, strict=True):
        if step[0] == "col" and step[1].startswith("r."):  # a read passed on: its value, from the walk
            if step[1][2:] not in read_types:  # r.committed, or a read no event issues
                return None
            lines.append(f"po{len(outs)}[i] = rv{slot_of[step[1][2:]]}")
            outs.append(f"po{len(outs)}")
            steps.append((name, np.dtype(read_types[step[1][2:]].to_pandas_dtype())))
            continue
        if step[0] == "col":
            steps.append((name, step[1]))
            continue
        if step[0] != "jit" or not _cannot_raise(node):
            return None
        names, dtypes = {}, {}
        for c in node.columns():
            if c.startswith("r."):
                if c[2:] not in read_types:  # r.committed, or a read no event issues
                    return None
                names[c] = f"RV{slot_of[c[2:]]}_"
                dtypes[c] = np.dtype(read_types[c[2:]].to_pandas_dtype())
            else:
                names[c] = every.setdefault("e." + c, f"E{len(every)}")
                dtypes[c] = np.dtype(cols[c].type.to_pandas_dtype())
        text = jit._source(node, names, dtypes)
        for c, nm in names.items():
            if c.startswith("r."):
                text = text.replace(f"{nm}[i]", f"rv{nm[2:-1]}")
        lines.append(f"po{len(outs)}[i] = {text}")
        outs.append(f"po{len(outs)}")
        steps.append((name, step[3]))
    if not outs:
        return None
    src = fused.serial_source(live, target_int, source_int, slots, every, places, bits=True, post=(outs, lines))
    names = sorted(every, key=lambda c: int(every[c][1:]))
    return fused.load_serial(src), names, steps


def run(engine, post, columns: dict[str, pa.Array], cols: dict[str, pa.Array], n: int):
    """The output fields of ``post`` for the batch, its transactions applied; None where this does not
    apply (nothing changed: the general path runs)."""
    begun = begin(engine, post, columns, cols, n)
    if begun is None:
        return None
    fn, args, land, saved = begun
    runs.save(engine, saved)
    t0 = time.process_time()
    r = fn(*args)
    return land(r, time.process_time() - t0)


def begin(engine, post, columns: dict[str, pa.Array], cols: dict[str, pa.Array], n: int):
    """``(kernel, args, land, saved)`` as ``tidal.tx.runs.serial_begin``, ``land`` giving the output
    fields; None where this does not apply."""
    made = _plan(engine, post, columns)
    if made is None:
        return None
    fn, names, steps = made
    if any(cols[c].null_count for c in names):
        return None
    ecols = [cols[c].to_numpy(zero_copy_only=False) for c in names]
    outs = [np.empty(n, step) for _, step in steps if not isinstance(step, str)]
    saved: list = []  # the tables before the walk (``runs.save``)
    count = np.zeros(1, np.int64)
    none_i, none_f, none_b = np.empty((0, 0), np.int64), np.empty((0, 0), np.float64), np.empty((0, 0), np.uint8)
    nothing = np.zeros(1, np.uint8)  # no transaction aborts

    def land(r: int, cpu: float):
        if r != -1:
            engine.icells[:], engine.fcells[:] = saved
            return None
        st = engine.stats
        phases = st.setdefault("phases", {})
        phases["walk"] = phases.get("walk", 0.0) + cpu
        m = int(count[0])
        st["serial_walks"] = st.get("serial_walks", 0) + 1
        st["post_fused"] = st.get("post_fused", 0) + 1
        st["groups"] += 1
        st["waves"] += 1
        st["largest_group"] = max(st["largest_group"], m)
        st["events"] += n
        st["batches"] += 1
        st["operations"] += m
        st["intervals"] += (n + engine.interval - 1) // engine.interval
        computed = iter(outs)
        return {name: columns[step] if isinstance(step, str) else pa.array(next(computed)) for name, step in steps}

    args = (0, n, engine.icells, engine.fcells, nothing, none_i, none_f, none_b, count, *outs, *ecols)
    return fn, args, land, saved

"""The state-access kernel: one numba function per set of operation templates.

The kernel walks *groups* of operations, each group in (transaction, operation) order, one
thread per group (``prange``), wave after wave: a wave ends at a barrier, and the next wave sees
everything the previous one wrote. What a group and a wave are is the scheduler's choice
(``tidal.tx.schedule``); the walk is the same for all of them:

- the operation's lambdas are inlined, per template, as compiled by ``tidal.expr``: the record's
  value is ``v``, a source record's value ``s``, event fields are arrays indexed by the event;
- a failed condition undoes the transaction's earlier operations in the group (its old values
  were saved) and skips its later ones: the scheduler guarantees that every operation of a
  transaction that can abort lies in one group;
- a division by zero (the only way a compiled lambda raises) marks the operation and stops the
  group; the caller restores the tables and names the event.
"""

from __future__ import annotations

import os

from ..core.errors import PlanError
from ..expr.jit import load_kernel
from ..expr.nodes import BinOp, BoolOp, Call, Col, Compare, Const, IfElse, Node, Unary
from .trace import READ, WRITE, OpTemplate, S, V

# Waves end at barriers: threads spinning there stall each other on a shared machine, so OpenMP's
# threads sleep while they wait (unless the user chose otherwise; read when numba starts its threads).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
_DECORATOR = "@numba.njit(cache={cache}, nogil=True, parallel=True, error_model='numpy')\n"
_DIV = ("/", "//", "%")


class Unsupported(PlanError):
    pass


def kind_of(node: Node, kinds: dict[str, str]) -> str:
    """'i' (integer), 'f' (float) or 'b' (boolean) for what ``node`` computes."""
    if isinstance(node, Col):
        return kinds[node.name]
    if isinstance(node, Const):
        v = node.value
        if isinstance(v, bool):
            return "b"
        if isinstance(v, int):
            return "i"
        if isinstance(v, float):
            return "f"
        raise Unsupported(f"constant {v!r} in a transaction lambda is not supported (numbers only)")
    if isinstance(node, BinOp):
        a, b = kind_of(node.left, kinds), kind_of(node.right, kinds)
        if node.op == "**":
            raise Unsupported("** in a transaction lambda is not supported")
        if node.op in ("&", "|", "^", "<<", ">>"):
            if "f" in (a, b):
                raise Unsupported(f"{node.op} on floats in {node}")
            return "b" if a == b == "b" and node.op in ("&", "|", "^") else "i"
        if node.op == "/":
            return "f"
        return "f" if "f" in (a, b) else "i"
    if isinstance(node, Compare):
        if node.op not in ("==", "!=", "<", "<=", ">", ">="):
            raise Unsupported(f"comparison {node.op!r} in a transaction lambda is not supported")
        kind_of(node.left, kinds), kind_of(node.right, kinds)
        return "b"
    if isinstance(node, BoolOp):
        for o in node.operands:
            kind_of(o, kinds)
        return "b"
    if isinstance(node, Unary):
        k = kind_of(node.operand, kinds)
        if node.op == "not":
            return "b"
        if node.op == "~":
            raise Unsupported("~ in a transaction lambda is not supported")
        return "i" if k == "b" else k
    if isinstance(node, IfElse):
        kind_of(node.cond, kinds)
        a, b = kind_of(node.then, kinds), kind_of(node.otherwise, kinds)
        if a == b:
            return a
        return "f" if "f" in (a, b) else "i"
    if isinstance(node, Call):
        ks = [kind_of(x, kinds) for x in node.args]
        if node.func == "abs" and len(ks) == 1:
            return "i" if ks[0] == "b" else ks[0]
        if node.func in ("min", "max") and len(ks) == 2:
            return "f" if "f" in ks else "i"
        if node.func == "float" and len(ks) == 1:
            return "f"
        if node.func == "int" and len(ks) == 1:
            return "i"
        raise Unsupported(f"call {node.func} in a transaction lambda is not supported")
    raise Unsupported(f"{node} in a transaction lambda is not supported (numeric lambdas only)")


class _Source:
    def __init__(self, events: dict[str, str], loaded: dict[str, str] | None = None):
        self.events = events  # "e.field" -> the kernel's argument name
        self.loaded = loaded or {}  # "e.field" -> a local the kernel loaded the event's value into

    def col(self, name: str) -> str:
        if name == V:
            return "v"
        if name == S:
            return "s"
        return self.loaded.get(name) or f"{self.events[name]}[i]"

    def src(self, n: Node) -> str:
        if isinstance(n, Col):
            return self.col(n.name)
        if isinstance(n, Const):
            return repr(n.value)
        if isinstance(n, BinOp):
            return f"({self.src(n.left)} {n.op} {self.src(n.right)})"
        if isinstance(n, Compare):
            return f"({self.src(n.left)} {n.op} {self.src(n.right)})"
        if isinstance(n, BoolOp):
            return "(" + f" {n.op} ".join(f"bool({self.src(o)})" for o in n.operands) + ")"
        if isinstance(n, Unary):
            return f"(not {self.src(n.operand)})" if n.op == "not" else f"({n.op}{self.src(n.operand)})"
        if isinstance(n, IfElse):
            return f"({self.src(n.then)} if {self.src(n.cond)} else {self.src(n.otherwise)})"
        if isinstance(n, Call):
            return f"{n.func}({', '.join(self.src(a) for a in n.args)})"
        raise TypeError(n)

    def bad(self, n: Node) -> str | None:
        """An expression true exactly when evaluating ``n`` the Python way divides by zero."""
        if isinstance(n, BoolOp):
            out = None
            for o in reversed(n.operands):
                b = self.bad(o)
                test = f"bool({self.src(o)})" if n.op == "and" else f"(not bool({self.src(o)}))"
                rest = None if out is None else f"({test} and {out})"
                out = _or(b, rest)
            return out
        if isinstance(n, IfElse):
            a, b = self.bad(n.then), self.bad(n.otherwise)
            branch = None if a is None and b is None else f"({a or 'False'} if {self.src(n.cond)} else {b or 'False'})"
            return _or(self.bad(n.cond), branch)
        out = None
        for c in n.children():
            out = _or(out, self.bad(c))
        if isinstance(n, BinOp) and n.op in _DIV and not (isinstance(n.right, Const) and n.right.value != 0):
            out = _or(out, f"({self.src(n.right)} == 0)")
        return out


def _or(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None:
        return a
    return f"({a} or {b})"


def template_code(k: int, t: OpTemplate, target_int: bool, source_int: bool | None, gen: _Source) -> list[str]:
    cells = "icells" if target_int else "fcells"
    pad = " " * 12
    lines = [f"        {'if' if k == 0 else 'elif'} tk == {k}:", f"{pad}c = op_cell[j]"]
    if t.kind != WRITE or (t.condition is not None and V in t.condition.columns()):
        lines.append(f"{pad}v = {cells}[c]")
    if t.source is not None:
        lines.append(f"{pad}s = {'icells' if source_int else 'fcells'}[op_src[j]]")
    if t.kind == READ:
        lines.append(f"{pad}{'rd_i' if target_int else 'rd_f'}[j] = v")
        return lines
    body = pad
    if t.condition is not None:
        bad = gen.bad(t.condition)
        if bad is not None:
            lines += [f"{pad}if {bad}:", f"{pad}    err = True"]
            lines += [f"{pad}elif not ({gen.src(t.condition)}):", f"{pad}    ok = False", f"{pad}else:"]
        else:
            lines += [f"{pad}if not ({gen.src(t.condition)}):", f"{pad}    ok = False", f"{pad}else:"]
        body = pad + "    "
    bad = gen.bad(t.value)
    cast = "np.int64" if target_int else "np.float64"
    if bad is not None:
        lines += [f"{body}if {bad}:", f"{body}    err = True", f"{body}else:"]
        body += "    "
    lines += [
        f"{body}nv = {cast}({gen.src(t.value)})",
        f"{body}{'old_i' if target_int else 'old_f'}[j] = {cells}[c]",
        f"{body}{cells}[c] = nv",
    ]
    return lines


def kernel_source(templates: list[OpTemplate], target_int: list[bool], source_int: list, events: dict[str, str]) -> str:
    gen = _Source(events)
    args = ", ".join(sorted(events.values(), key=lambda a: int(a[1:])))
    tail = f"{', ' if args else ''}{args}"
    common = "group_ptr, order, op_ev, op_tmpl, op_cell, op_src, t_write, t_int, icells, fcells"
    common += ", old_i, old_f, rd_i, rd_f"
    head = f"def kernel(wave_ptr, nchunks, {common}, aborted, op_err, g_err{tail}):\n"
    lines = [
        # each wave: its groups cut into one run of consecutive groups per thread, balanced by operations
        "    stopped = 0",
        "    for w in range(len(wave_ptr) - 1):",
        "        if stopped:",
        "            break",
        "        g0 = wave_ptr[w]",
        "        g1 = wave_ptr[w + 1]",
        "        a = group_ptr[g0]",
        "        b = group_ptr[g1]",
        "        nch = min(nchunks, g1 - g0)",
        "        bounds = group_ptr[g0 : g1 + 1]",
        "        for c in numba.prange(nch):",
        "            lo = g0 if c == 0 else g0 + np.searchsorted(bounds, a + (b - a) * c // nch)",
        "            hi = g1 if c == nch - 1 else g0 + np.searchsorted(bounds, a + (b - a) * (c + 1) // nch)",
        f"            run_groups(lo, hi, {common}, aborted, op_err, g_err{tail})",
        "        for g in range(g0, g1):",
        "            if g_err[g]:",
        "                stopped = 1",
        "    return stopped",
        "",
        "",
        "@numba.njit(nogil=True, cache=True, error_model='numpy')",
        f"def run_groups(ga, gb, {common}, aborted, op_err, g_err{tail}):",
        "  for g in range(ga, gb):",
        "    start = group_ptr[g]",
        "    stop = group_ptr[g + 1]",
        "    cur = -1",
        "    txn_start = start",
        "    dead = False",
        "    for p in range(start, stop):",
        "        j = order[p]",
        "        i = op_ev[j]",
        "        if i != cur:",
        "            cur = i",
        "            txn_start = p",
        "            dead = False",
        "        if dead:",
        "            continue",
        "        tk = op_tmpl[j]",
        "        ok = True",
        "        err = False",
    ]
    for k, t in enumerate(templates):
        lines += template_code(k, t, target_int[k], source_int[k], gen)
    lines += [
        "        if err:",
        "            op_err[j] = 1",
        "            g_err[g] = True",
        "            break",
        "        if not ok:",
        "            for q in range(p - 1, txn_start - 1, -1):",
        "                jj = order[q]",
        "                kk = op_tmpl[jj]",
        "                if t_write[kk]:",
        "                    if t_int[kk]:",
        "                        icells[op_cell[jj]] = old_i[jj]",
        "                    else:",
        "                        fcells[op_cell[jj]] = old_f[jj]",
        "            aborted[i] = 1",
        "            dead = True",
        "",
    ]
    return head + "\n".join(lines)


def load(source: str):
    """Compile the kernel, or load it from tidal's kernel cache (``tidal.expr.jit``)."""
    return load_kernel(source, decorator=_DECORATOR)


def decompose_source(
    templates: list[OpTemplate], kinds: dict[str, str], places: list, owners: dict | None = None
) -> tuple[str, list[str]] | None:
    """A parallel kernel for compute mode: per event, which templates it issues and the cells they
    address (``places[k]``: (cell base, record base, size) of the target, and of the source or None).
    None when some key or ``when`` is not a plain numeric expression (then numpy evaluates them).
    With ``owners`` (``shift``, ``slots``: each template's read output row or -1): the kernel of
    ``tidal.tx.fused``'s owner lists instead, built straight from the events."""
    events: dict[str, str] = {}
    for t in templates:
        for node in [t.key, t.when] + ([t.source[1]] if t.source else []):
            if node is None:
                continue
            for col in node.columns():
                if not col.startswith("e.") or kinds.get(col) not in ("i", "f", "b"):
                    return None
                events.setdefault(col, f"E{len(events)}")
            try:
                kind = kind_of(node, kinds)
            except Unsupported:
                return None
            if node is not t.when and kind != "i":
                return None
        if t.table.keys is not None or (t.source and t.source[0].keys is not None):
            return None
    gen = _Source(events)
    args = sorted(events.values(), key=lambda a: int(a[1:]))
    tail = f"{', ' if args else ''}{', '.join(args)}"
    if owners is None:
        lines = [f"def kernel(n, issued, cell2d, src2d, srec2d, err{tail}):", "    for i in numba.prange(n):"]
    else:
        common = f"n, nthreads, mode, lists, cells, srcs, rissued, spread, err{tail}"
        lines = [
            f"def kernel({common.replace('mode,', 'mode, at,')}):",
            "    for c in numba.prange(nthreads):",
            f"        fill(c, at[c], {common})",
            "",
            "",
            "@numba.njit(nogil=True, cache=True, error_model='numpy')",
            f"def fill(c, at, {common}):",
            "    for i in range(c * n // nthreads, (c + 1) * n // nthreads):",
            "        first = -1",  # the list of the event's first operation; spread: others too
            "        multi = 0",
        ]
    for k, t in enumerate(templates):
        (cbase, rbase, size), src = places[k]
        opened, pad = guarded_keys(gen, t, size, src, "        ", ["err[i] = 1"], ["err[i] = 1", "continue"])
        lines += opened
        if owners is not None:  # the record's owner thread: a hash of its block of 16 (fused._owner)
            lines += [
                f"{pad}blk = ({rbase} + key0) >> 4",
                f"{pad}t = ((blk * 2654435761) & 0xFFFFFFFF) * nthreads >> 32",
            ]
            lines += [f"{pad}if mode:", f"{pad}    p = at[t]", f"{pad}    lists[p] = (i << {owners['shift']}) | {k}"]
            lines += [f"{pad}    cells[p] = {cbase} + key0"]
            if src is not None:
                lines += [f"{pad}    srcs[p] = {src[0]} + key1"]
            if owners["slots"][k] >= 0:
                lines += [f"{pad}    rissued[{owners['slots'][k]}, i] = True"]
            lines += [f"{pad}at[t] += 1", f"{pad}if first < 0:", f"{pad}    first = t", f"{pad}elif t != first:"]
            lines += [f"{pad}    multi = 1"]
            continue
        lines += [f"{pad}issued[i, {k}] = True", f"{pad}cell2d[i, {k}] = {cbase} + key0"]
        if src is not None:
            lines += [f"{pad}src2d[i, {k}] = {src[0]} + key1", f"{pad}srec2d[i, {k}] = {src[1]} + key1"]
    if owners is not None:
        lines += ["        if mode:", "            spread[i] = multi"]
    return "\n".join(lines) + "\n", sorted(events, key=lambda c: int(events[c][1:]))


def load_decompose(source: str):
    return load_kernel(source, decorator="@numba.njit(cache={cache}, nogil=True, parallel=True, error_model='numpy')\n")


def guarded_keys(gen: _Source, t: OpTemplate, size: int, src, pad: str, flag: list[str], stop: list[str]):
    """Lines that open template ``t`` in a generated loop, and the indentation inside them: its ``when``
    guard, then ``key0`` (its record, below ``size``) and ``key1`` (its source record, when ``src``),
    each checked: a value that cannot be computed runs ``flag`` (``when``) or ``stop`` (keys), a key out
    of its table runs ``stop``."""
    lines = []
    if t.when is not None:
        bad = gen.bad(t.when)
        if bad is not None:
            lines += [f"{pad}if {bad}:", *(f"{pad}    {x}" for x in flag)]
        lines.append(f"{pad}if {gen.src(t.when)}:")
        pad += "    "
    checks = [(gen.bad(t.key), gen.src(t.key), size)]
    if src is not None:
        checks.append((gen.bad(t.source[1]), gen.src(t.source[1]), src[2]))
    for j, (bad, text, limit) in enumerate(checks):
        if bad is not None:
            lines += [f"{pad}if {bad}:", *(f"{pad}    {x}" for x in stop)]
        lines += [f"{pad}key{j} = {text}", f"{pad}if key{j} < 0 or key{j} >= {limit}:"]
        lines += [f"{pad}    {x}" for x in stop]
    return lines, pad

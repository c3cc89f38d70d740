"""Turning ``access(e, t)`` into operation templates.

The access function is called once, with a symbolic event: ``e.amount`` is an expression, and
arithmetic and comparisons on it build expression trees (``tidal.expr.nodes``). Each call on ``t``
(``read``, ``write``, ``read_modify``) records one :class:`OpTemplate`: the table, the key and
value expressions over the event, an optional ``when`` (the events that issue the operation), and
the operation's lambdas translated by tidal's lambda compiler, their parameter standing for the
record's current value (``v``) and, with ``source=``, the value of another record (``s``).
A Python ``if`` on an event field cannot be traced: ``when=`` says which events issue an operation.
"""

from __future__ import annotations

import builtins
import types
from dataclasses import dataclass

import numpy as np

from ..core.errors import PlanError
from ..expr.lambdas import Opaque, translate_bound
from ..expr.nodes import BinOp, Call, Col, Compare, Const, Node, Unary
from .table import Table

READ, WRITE, RMW = 0, 1, 2
KIND_NAMES = {READ: "read", WRITE: "write", RMW: "read_modify"}
V, S = "__v", "__s"  # the columns standing for the record's value and the source record's value


class TraceError(PlanError):
    """The access function does something that cannot be traced into operations."""


def _node(x) -> Node:
    if isinstance(x, Expr):
        return x.node
    if isinstance(x, bool | int | float) or isinstance(x, np.generic):
        return Const(x.item() if isinstance(x, np.generic) else x)
    raise TraceError(f"transact: {x!r} ({type(x).__name__}) cannot be used in a transaction; use numbers and e.<field>")


def _bin(op):
    return lambda self, other: Expr(BinOp(op, self.node, _node(other)))


def _rbin(op):
    return lambda self, other: Expr(BinOp(op, _node(other), self.node))


def _cmp(op):
    return lambda self, other: Expr(Compare(op, self.node, _node(other)))


class Expr:
    """A symbolic value while ``access`` is traced."""

    __slots__ = ("node",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, node: Node):
        self.node = node

    __add__, __sub__, __mul__, __truediv__ = _bin("+"), _bin("-"), _bin("*"), _bin("/")
    __floordiv__, __mod__ = _bin("//"), _bin("%")
    __radd__, __rsub__, __rmul__, __rtruediv__ = _rbin("+"), _rbin("-"), _rbin("*"), _rbin("/")
    __rfloordiv__, __rmod__ = _rbin("//"), _rbin("%")
    __eq__, __ne__, __lt__, __le__, __gt__, __ge__ = (
        _cmp("=="),
        _cmp("!="),
        _cmp("<"),
        _cmp("<="),
        _cmp(">"),
        _cmp(">="),
    )  # type: ignore[assignment]
    __and__, __or__ = _bin("&"), _bin("|")

    def __neg__(self):
        return Expr(Unary("-", self.node))

    def __abs__(self):
        return Expr(Call("abs", (self.node,)))

    def __bool__(self):
        raise TraceError(
            f"transact: access branches on {self.node}, which depends on the event; pass when=<condition> "
            "to an operation instead of an if (and use & | instead of and/or)"
        )

    def __repr__(self) -> str:
        return f"Expr({self.node})"


class SymEvent:
    """The symbolic event ``e``: ``e.field`` and ``e["field"]`` are expressions over the event's fields."""

    def __init__(self, fields: list[str] | None):
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name: str) -> Expr:
        if name.startswith("__"):
            raise AttributeError(name)
        fields = object.__getattribute__(self, "_fields")
        if fields is not None and name not in fields:
            raise TraceError(f"transact: the event has no field {name!r}; fields are {fields}")
        return Expr(Col("e." + name))

    __getitem__ = __getattr__


@dataclass
class OpTemplate:
    seq: int
    kind: int
    table: Table
    column: str
    key: Node
    when: Node | None = None
    value: Node | None = None  # write: over the event (and s with a source); read_modify: over v, s, event
    condition: Node | None = None  # over v, s, event
    source: tuple[Table, Node, str] | None = None
    name: str | None = None  # a read's result name
    fn: object = None  # the user's lambdas, kept for describing
    cond_fn: object = None

    def describe(self) -> str:
        what = f"{KIND_NAMES[self.kind]}({self.table.name}[{self.key}].{self.column}"
        if self.value is not None:
            what += f", {self.value}"
        if self.condition is not None:
            what += f", if {self.condition}"
        return what + ")" + (f" when {self.when}" if self.when is not None else "")


def translate_fn(fn, has_source: bool, what: str) -> Node:
    """A transaction lambda as a tree over ``__v`` (the record's value), ``__s`` (the source's) and ``e.*``."""
    if isinstance(fn, Expr) or not callable(fn):
        node = _node(fn)
        return node
    if not isinstance(fn, types.FunctionType):
        raise TraceError(f"transact: {what} must be a lambda, not {type(fn).__name__}")
    nparams = fn.__code__.co_argcount
    expected = 2 if has_source else 1
    if nparams != expected:
        shape = "lambda v, s: ... (v: the record's value, s: the source's)" if has_source else "lambda v: ..."
        raise TraceError(f"transact: {what} takes {nparams} parameter(s); expected {shape}")
    params = [V, S][:nparams]
    rows = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            try:
                if isinstance(cell.cell_contents, SymEvent):
                    rows[name] = "e."
            except ValueError:
                pass
    key = _translation_key(fn, params, rows)
    if key is not None and key in _TRANSLATED:
        return _TRANSLATED[key]
    try:
        node = translate_bound(fn, params, rows)
        if key is not None:
            if len(_TRANSLATED) >= 4096:
                _TRANSLATED.clear()
            _TRANSLATED[key] = node
        return node
    except Opaque as first:
        try:
            return _node(fn(*(Expr(Col(p)) for p in params)))
        except TraceError:
            raise
        except Exception:
            raise TraceError(f"transact: {what} is not supported: {first}") from None


# translated transaction lambdas by ``_translation_key``: an access function is traced once per query,
# and translating its lambdas again (locating their source, parsing, checking the bytecode) cost up to
# a millisecond a query (Online Bidding's 41 operations)
_TRANSLATED: dict = {}
_SCALARS = (int, float, bool, str, type(None))


def _translation_key(fn, params: list[str], rows: dict[str, str]):
    """What a lambda's translation depends on: its code, its parameters, which free names are the
    event, and the values of its other free names and of the globals it names (plain scalars, by type
    and value); None when one of them is anything else (then it is translated every time)."""
    code = fn.__code__
    values = []
    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=True):
        if name in rows:
            continue
        try:
            v = cell.cell_contents
        except ValueError:
            return None
        if type(v) not in _SCALARS:
            return None
        values.append((name, type(v), v))
    for name in code.co_names:
        if name in fn.__globals__:
            v = fn.__globals__[name]
            if type(v) not in _SCALARS:
                return None
            values.append((name, type(v), v))
        elif hasattr(builtins, name):
            return None
    return (code, tuple(params), tuple(sorted(rows.items())), tuple(values))


class Tracer:
    """The ``t`` of ``access(e, t)`` while tracing: records one template per call."""

    def __init__(self):
        self.ops: list[OpTemplate] = []
        self.read_names: list[str] = []

    def _check(self, table, column: str) -> None:
        if not isinstance(table, Table):
            raise TraceError(f"transact: {table!r} is not a tx.Table")
        table.column_index(column)

    def _when(self, when) -> Node | None:
        return None if when is None else _node(when)

    def read(self, table: Table, key, column: str, name: str | None = None, when=None) -> str:
        """Read ``table[key].column``; the post-process sees it as ``r.<name>`` (default ``read<i>``)."""
        self._check(table, column)
        name = name or f"read{len(self.read_names)}"
        if name in self.read_names or name == "committed":
            raise TraceError(f"transact: two reads named {name!r}")
        self.read_names.append(name)
        self.ops.append(OpTemplate(len(self.ops), READ, table, column, _node(key), self._when(when), name=name))
        return name

    def _source(self, source):
        if source is None:
            return None
        try:
            table, key, column = source
        except (TypeError, ValueError):
            raise TraceError("transact: source must be (table, key, column)") from None
        self._check(table, column)
        return (table, _node(key), column)

    def write(self, table: Table, key, column: str, value, condition=None, source=None, when=None) -> None:
        """``table[key].column = value``; ``value`` is over the event, or ``lambda s: ...`` with a source.
        A ``condition`` (``lambda v: ...``, or ``lambda v, s: ...``) that fails aborts the transaction."""
        self._check(table, column)
        src = self._source(source)
        if callable(value) and not isinstance(value, Expr):
            if src is None:
                raise TraceError("transact: write's value is a lambda but no source= is given; pass a value")
            node = _swap_source(translate_fn(value, False, "write's value"))
        else:
            node = _node(value)
        cond = None if condition is None else translate_fn(condition, src is not None, "condition")
        self.ops.append(OpTemplate(len(self.ops), WRITE, table, column, _node(key), self._when(when), node, cond, src))

    def read_modify(self, table: Table, key, column: str, fn, condition=None, source=None, when=None) -> None:
        """``table[key].column = fn(v)`` (``fn(v, s)`` with a source record); a failed condition aborts."""
        self._check(table, column)
        src = self._source(source)
        node = translate_fn(fn, src is not None, "read_modify's function")
        cond = None if condition is None else translate_fn(condition, src is not None, "condition")
        self.ops.append(
            OpTemplate(len(self.ops), RMW, table, column, _node(key), self._when(when), node, cond, src, fn=fn)
        )


def _swap_source(node: Node) -> Node:
    """A one-parameter value lambda used with a source: its parameter is the source's value."""
    return _rename(node, {V: S})


def _rename(node: Node, names: dict[str, str]) -> Node:
    import dataclasses

    if isinstance(node, Col):
        return Col(names.get(node.name, node.name))
    changes = {}
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Node):
            changes[f.name] = _rename(value, names)
        elif isinstance(value, tuple) and value and all(isinstance(x, Node) for x in value):
            changes[f.name] = tuple(_rename(x, names) for x in value)
    return dataclasses.replace(node, **changes) if changes else node


def trace(access, fields: list[str] | None) -> Tracer:
    """Call ``access`` once on a symbolic event and return the recorded operation templates."""
    t = Tracer()
    try:
        access(SymEvent(fields), t)
    except TraceError:
        raise
    except Exception as exc:
        raise TraceError(f"transact: access cannot be traced ({type(exc).__name__}: {exc})") from exc
    if not t.ops:
        raise TraceError("transact: access issued no operations")
    return t

"""The expression tree that user lambdas and SQL expressions are translated into.

Nodes are small immutable dataclasses (:func:`tidal.core.frozen.immutable`: no code is generated
when this module loads); kernels (``kernels.py``, Python's semantics; ``sqlkernels.py``, SQL's)
evaluate them over the columns of a batch, and ``jit.py`` turns numeric trees into fused loops.
"""

from __future__ import annotations

from ..core.frozen import Frozen, immutable, set_field


class Node:
    def children(self) -> tuple[Node, ...]:
        return ()

    def walk(self):
        yield self
        for c in self.children():
            yield from c.walk()

    def columns(self) -> set[str]:
        return {n.name for n in self.walk() if isinstance(n, Col)}


@immutable
class Col(Node, Frozen):
    name: str

    def __init__(self, name):
        set_field(self, "name", name)

    def __str__(self) -> str:
        return self.name


@immutable
class Const(Node, Frozen):
    value: object

    def __init__(self, value):
        set_field(self, "value", value)

    def __str__(self) -> str:
        return repr(self.value)


@immutable
class BinOp(Node, Frozen):
    op: str  # + - * / // % ** & | ^ << >>
    left: Node
    right: Node

    def __init__(self, op, left, right):
        set_field(self, "op", op)
        set_field(self, "left", left)
        set_field(self, "right", right)

    def children(self):
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@immutable
class Unary(Node, Frozen):
    op: str  # - + not ~
    operand: Node

    def __init__(self, op, operand):
        set_field(self, "op", op)
        set_field(self, "operand", operand)

    def children(self):
        return (self.operand,)

    def __str__(self) -> str:
        sep = " " if self.op == "not" else ""
        return f"({self.op}{sep}{self.operand})"


@immutable
class Compare(Node, Frozen):
    op: str  # == != < <= > >= in notin
    left: Node
    right: Node

    def __init__(self, op, left, right):
        set_field(self, "op", op)
        set_field(self, "left", left)
        set_field(self, "right", right)

    def children(self):
        return (self.left, self.right)

    def __str__(self) -> str:
        op = "not in" if self.op == "notin" else self.op
        return f"({self.left} {op} {self.right})"


@immutable
class BoolOp(Node, Frozen):
    op: str  # and / or
    operands: tuple[Node, ...]

    def __init__(self, op, operands):
        set_field(self, "op", op)
        set_field(self, "operands", operands)

    def children(self):
        return self.operands

    def __str__(self) -> str:
        return "(" + f" {self.op} ".join(map(str, self.operands)) + ")"


@immutable
class IfElse(Node, Frozen):
    cond: Node
    then: Node
    otherwise: Node

    def __init__(self, cond, then, otherwise):
        set_field(self, "cond", cond)
        set_field(self, "then", then)
        set_field(self, "otherwise", otherwise)

    def children(self):
        return (self.cond, self.then, self.otherwise)

    def __str__(self) -> str:
        return f"({self.then} if {self.cond} else {self.otherwise})"


@immutable
class Call(Node, Frozen):
    func: str  # abs len min max float int str.upper str.lower str.strip str.startswith ...
    args: tuple[Node, ...]

    def __init__(self, func, args):
        set_field(self, "func", func)
        set_field(self, "args", args)

    def children(self):
        return self.args

    def __str__(self) -> str:
        return f"{self.func}({', '.join(map(str, self.args))})"


@immutable
class PyCall(Node, Frozen):
    """A call to a Python function tidal does not know (the user's own, ``re.search``...).

    Its arguments are evaluated columnar; the function itself is called once per row on their
    values, in row order, exactly as the row-at-a-time lambda would call it.
    """

    func: object
    name: str
    args: tuple[Node, ...]

    def __init__(self, func, name, args):
        set_field(self, "func", func)
        set_field(self, "name", name)
        set_field(self, "args", args)

    def children(self):
        return self.args

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


@immutable
class Record(Node, Frozen):
    """A projection's result: output field name -> expression."""

    fields: tuple[tuple[str, Node], ...]

    def __init__(self, fields):
        set_field(self, "fields", fields)

    def children(self):
        return tuple(n for _, n in self.fields)

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}: {v}" for k, v in self.fields) + "}"


# -- SQL nodes: operations with no Python counterpart, evaluated with SQL's NULL rules -----------
# (tidal.expr.sqlkernels). The generic nodes above mean the same in SQL for non-null values, so a
# SQL tree built from them alone runs on the lambdas' kernels when its columns hold no nulls.


@immutable
class SqlCall(Node, Frozen):
    """A NULL-propagating SQL function or operator (``mod``, ``upper``, ``in``...); ``params`` are
    its constant arguments (a pattern, a unit, a number of digits)."""

    func: str
    args: tuple[Node, ...]
    params: tuple = ()

    def __init__(self, func, args, params=()):
        set_field(self, "func", func)
        set_field(self, "args", args)
        set_field(self, "params", params)

    def children(self):
        return self.args

    def __str__(self) -> str:
        return f"{self.func}({', '.join([*map(str, self.args), *map(repr, self.params)])})"


@immutable
class IsNull(Node, Frozen):
    """``operand IS NULL``: never null itself."""

    operand: Node

    def __init__(self, operand):
        set_field(self, "operand", operand)

    def children(self):
        return (self.operand,)

    def __str__(self) -> str:
        return f"({self.operand} is null)"


@immutable
class Like(Node, Frozen):
    operand: Node
    pattern: str
    ignore_case: bool = False

    def __init__(self, operand, pattern, ignore_case=False):
        set_field(self, "operand", operand)
        set_field(self, "pattern", pattern)
        set_field(self, "ignore_case", ignore_case)

    def children(self):
        return (self.operand,)

    def __str__(self) -> str:
        return f"({self.operand} {'ilike' if self.ignore_case else 'like'} {self.pattern!r})"


@immutable
class Case(Node, Frozen):
    """SQL CASE: the value of the first condition that is true (a null condition is not), else
    ``default``; the result type is the branches' common type."""

    whens: tuple[tuple[Node, Node], ...]
    default: Node

    def __init__(self, whens, default):
        set_field(self, "whens", whens)
        set_field(self, "default", default)

    def children(self):
        return (*(x for pair in self.whens for x in pair), self.default)

    def __str__(self) -> str:
        arms = " ".join(f"when {c} then {v}" for c, v in self.whens)
        return f"(case {arms} else {self.default} end)"


@immutable
class Cast(Node, Frozen):
    """CAST (``safe``: TRY_CAST, null where a value does not convert); ``to`` is an Arrow type."""

    operand: Node
    to: object
    safe: bool = False

    def __init__(self, operand, to, safe=False):
        set_field(self, "operand", operand)
        set_field(self, "to", to)
        set_field(self, "safe", safe)

    def children(self):
        return (self.operand,)

    def __str__(self) -> str:
        return f"{'try_cast' if self.safe else 'cast'}({self.operand} as {self.to})"

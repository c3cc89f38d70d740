"""The expression tree that user lambdas and SQL expressions are translated into.

Nodes are small immutable dataclasses; kernels (``kernels.py``, Python's semantics;
``sqlkernels.py``, SQL's) evaluate them over the columns of a batch, and ``jit.py`` turns
numeric trees into fused loops.
"""

from __future__ import annotations

from dataclasses import dataclass


class Node:
    def children(self) -> tuple[Node, ...]:
        return ()

    def walk(self):
        yield self
        for c in self.children():
            yield from c.walk()

    def columns(self) -> set[str]:
        return {n.name for n in self.walk() if isinstance(n, Col)}


@dataclass(frozen=True)
class Col(Node):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const(Node):
    value: object

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class BinOp(Node):
    op: str  # + - * / // % ** & | ^ << >>
    left: Node
    right: Node

    def children(self):
        return (self.left, self.right)

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


@dataclass(frozen=True)
class Unary(Node):
    op: str  # - + not ~
    operand: Node

    def children(self):
        return (self.operand,)

    def __str__(self) -> str:
        sep = " " if self.op == "not" else ""
        return f"({self.op}{sep}{self.operand})"


@dataclass(frozen=True)
class Compare(Node):
    op: str  # == != < <= > >= in notin
    left: Node
    right: Node

    def children(self):
        return (self.left, self.right)

    def __str__(self) -> str:
        op = "not in" if self.op == "notin" else self.op
        return f"({self.left} {op} {self.right})"


@dataclass(frozen=True)
class BoolOp(Node):
    op: str  # and / or
    operands: tuple[Node, ...]

    def children(self):
        return self.operands

    def __str__(self) -> str:
        return "(" + f" {self.op} ".join(map(str, self.operands)) + ")"


@dataclass(frozen=True)
class IfElse(Node):
    cond: Node
    then: Node
    otherwise: Node

    def children(self):
        return (self.cond, self.then, self.otherwise)

    def __str__(self) -> str:
        return f"({self.then} if {self.cond} else {self.otherwise})"


@dataclass(frozen=True)
class Call(Node):
    func: str  # abs len min max float int str.upper str.lower str.strip str.startswith ...
    args: tuple[Node, ...]

    def children(self):
        return self.args

    def __str__(self) -> str:
        return f"{self.func}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class PyCall(Node):
    """A call to a Python function tidal does not know (the user's own, ``re.search``...).

    Its arguments are evaluated columnar; the function itself is called once per row on their
    values, in row order, exactly as the row-at-a-time lambda would call it.
    """

    func: object
    name: str
    args: tuple[Node, ...]

    def children(self):
        return self.args

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Record(Node):
    """A projection's result: output field name -> expression."""

    fields: tuple[tuple[str, Node], ...]

    def children(self):
        return tuple(n for _, n in self.fields)

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}: {v}" for k, v in self.fields) + "}"


# -- SQL nodes: operations with no Python counterpart, evaluated with SQL's NULL rules -----------
# (tidal.expr.sqlkernels). The generic nodes above mean the same in SQL for non-null values, so a
# SQL tree built from them alone runs on the lambdas' kernels when its columns hold no nulls.


@dataclass(frozen=True)
class SqlCall(Node):
    """A NULL-propagating SQL function or operator (``mod``, ``upper``, ``in``...); ``params`` are
    its constant arguments (a pattern, a unit, a number of digits)."""

    func: str
    args: tuple[Node, ...]
    params: tuple = ()

    def children(self):
        return self.args

    def __str__(self) -> str:
        return f"{self.func}({', '.join([*map(str, self.args), *map(repr, self.params)])})"


@dataclass(frozen=True)
class IsNull(Node):
    """``operand IS NULL``: never null itself."""

    operand: Node

    def children(self):
        return (self.operand,)

    def __str__(self) -> str:
        return f"({self.operand} is null)"


@dataclass(frozen=True)
class Like(Node):
    operand: Node
    pattern: str
    ignore_case: bool = False

    def children(self):
        return (self.operand,)

    def __str__(self) -> str:
        return f"({self.operand} {'ilike' if self.ignore_case else 'like'} {self.pattern!r})"


@dataclass(frozen=True)
class Case(Node):
    """SQL CASE: the value of the first condition that is true (a null condition is not), else
    ``default``; the result type is the branches' common type."""

    whens: tuple[tuple[Node, Node], ...]
    default: Node

    def children(self):
        return (*(x for pair in self.whens for x in pair), self.default)

    def __str__(self) -> str:
        arms = " ".join(f"when {c} then {v}" for c, v in self.whens)
        return f"(case {arms} else {self.default} end)"


@dataclass(frozen=True)
class Cast(Node):
    """CAST (``safe``: TRY_CAST, null where a value does not convert); ``to`` is an Arrow type."""

    operand: Node
    to: object
    safe: bool = False

    def children(self):
        return (self.operand,)

    def __str__(self) -> str:
        return f"{'try_cast' if self.safe else 'cast'}({self.operand} as {self.to})"

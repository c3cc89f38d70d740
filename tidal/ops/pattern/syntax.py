"""Row patterns: their syntax tree, the pattern language's parser, and the program an automaton runs.

The language is SQL's ``PATTERN`` (the subset Flink supports): variables (identifiers) are
concatenated by juxtaposition, ``|`` separates alternatives, ``( )`` groups, and a variable or
group takes one greedy quantifier: ``*``, ``+``, ``?``, ``{n}``, ``{n,}``, ``{,m}``, ``{n,m}``.
Reluctant quantifiers (``*?``, ``+?``, ``??``, ``{n,m}?``), anchors (``^``, ``$``), exclusions
(``{- -}``) and ``PERMUTE`` are refused with "not supported". A pattern that can match no rows,
or a quantified group that can match no rows (``(A?)*``), is refused too: every match and every
iteration consumes at least one row.

A pattern compiles to a program of four instructions (Thompson's construction, in the order of
preference): ``VAR v`` consumes one row mapped to variable ``v``; ``SPLIT x y`` continues at ``x``
and, with lower preference, at ``y``; ``JMP x``; ``MATCH``. Greedy quantifiers prefer one more
iteration, alternation prefers its left alternative: the order in which a backtracking matcher
would try the possibilities, which is the order SQL's row pattern matching prefers matches in.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.errors import PlanError

VAR, SPLIT, JMP, MATCH = 0, 1, 2, 3
MAX_REPEAT = 1000  # {n,m} bounds above this are refused (the program repeats the group m times)


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Seq:
    parts: tuple


@dataclass(frozen=True)
class Alt:
    options: tuple


@dataclass(frozen=True)
class Repeat:
    body: object
    low: int
    high: int | None  # None: unbounded


def variables(node) -> list[str]:
    """The pattern's variables, in order of first appearance."""
    out: list[str] = []

    def visit(n):
        if isinstance(n, Var):
            if n.name not in out:
                out.append(n.name)
        elif isinstance(n, Seq):
            for p in n.parts:
                visit(p)
        elif isinstance(n, Alt):
            for p in n.options:
                visit(p)
        else:
            visit(n.body)

    visit(node)
    return out


def nullable(node) -> bool:
    """Whether ``node`` can match no rows."""
    if isinstance(node, Var):
        return False
    if isinstance(node, Seq):
        return all(nullable(p) for p in node.parts)
    if isinstance(node, Alt):
        return any(nullable(p) for p in node.options)
    return node.low == 0 or nullable(node.body)


def to_text(node) -> str:
    if isinstance(node, Var):
        return node.name
    if isinstance(node, Seq):
        return " ".join(_wrap(p, Alt) for p in node.parts)
    if isinstance(node, Alt):
        return " | ".join(to_text(p) for p in node.options)
    body = _wrap(node.body, Alt | Seq | Repeat)
    low, high = node.low, node.high
    q = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((low, high))
    if q is None:
        q = f"{{{low}}}" if low == high else f"{{{low},{'' if high is None else high}}}"
    return body + q


def _wrap(node, kinds) -> str:
    return f"({to_text(node)})" if isinstance(node, kinds) else to_text(node)


# -- parsing ---------------------------------------------------------------------------------------
def parse_pattern(text: str):
    """The syntax tree of a pattern string; a :class:`PlanError` names what is wrong and where."""
    if not isinstance(text, str):
        raise PlanError(f"a pattern is a string such as 'A B+ C?', got {text!r}")
    parser = _Parser(text)
    node = parser.alternation()
    if parser.pos < len(text):
        parser.fail(f"unexpected {text[parser.pos]!r}")
    check(node)
    return node


def check(node) -> None:
    """Refuse patterns that can match no rows, and quantified groups that can."""
    if nullable(node):
        raise PlanError(
            f"pattern {to_text(node)} can match no rows: a pattern that matches an empty sequence is not supported"
        )

    def visit(n):
        if isinstance(n, Repeat):
            if nullable(n.body):
                raise PlanError(f"quantified group {to_text(n)} can repeat an empty match: not supported")
            visit(n.body)
        elif isinstance(n, Seq | Alt):
            for p in n.parts if isinstance(n, Seq) else n.options:
                visit(p)

    visit(node)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def fail(self, what: str):
        raise PlanError(f"pattern {self.text!r}, position {self.pos + 1}: {what}")

    def peek(self) -> str:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def alternation(self):
        options = [self.sequence()]
        while self.peek() == "|":
            self.pos += 1
            options.append(self.sequence())
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self):
        parts = []
        while True:
            c = self.peek()
            if c == "" or c in "|)":
                break
            parts.append(self.quantified(self.primary()))
        if not parts:
            self.fail("expected a variable or a group")
        return parts[0] if len(parts) == 1 else Seq(tuple(parts))

    def primary(self):
        c = self.peek()
        if c == "(":
            self.pos += 1
            inner = self.alternation()
            if self.peek() != ")":
                self.fail("expected ')'")
            self.pos += 1
            return inner
        if c in "^$":
            self.fail(f"anchor {c!r} is not supported")
        if c == "{" and self.text.startswith("{-", self.pos):
            self.fail("exclusion {- ... -} is not supported")
        if c.isalpha() or c == "_":
            start = self.pos
            while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] == "_"):
                self.pos += 1
            name = self.text[start : self.pos]
            if name.upper() == "PERMUTE" and self.peek() == "(":
                self.fail("PERMUTE is not supported")
            return Var(name)
        self.fail(f"unexpected {c!r}" if c else "unexpected end of pattern")

    def quantified(self, node):
        c = self.peek()
        if c == "*":
            low, high = 0, None
            self.pos += 1
        elif c == "+":
            low, high = 1, None
            self.pos += 1
        elif c == "?":
            low, high = 0, 1
            self.pos += 1
        elif c == "{" and not self.text.startswith("{-", self.pos):
            low, high = self.braces()
        else:
            return node
        if self.pos < len(self.text) and self.text[self.pos] == "?":
            self.fail(f"reluctant quantifier {self.text[self.pos - 1]}? is not supported (only greedy ones are)")
        if self.peek() in ("*", "+", "?", "{") and self.peek() != "":
            self.fail("a quantifier directly after another one: group with ( ) first")
        return Repeat(node, low, high)

    def braces(self):
        end = self.text.find("}", self.pos)
        if end < 0:
            self.fail("expected '}'")
        inner = self.text[self.pos + 1 : end].replace(" ", "")
        parts = inner.split(",")
        try:
            if len(parts) == 1:
                low = high = int(parts[0])
            elif len(parts) == 2:
                low = int(parts[0]) if parts[0] else 0
                high = int(parts[1]) if parts[1] else None
            else:
                raise ValueError
        except ValueError:
            self.fail(f"bad quantifier {{{inner}}}: expected {{n}}, {{n,}}, {{,m}} or {{n,m}}")
        if low < 0 or (high is not None and (high < low or high == 0)):
            self.fail(f"bad quantifier {{{inner}}}: bounds must satisfy 0 <= n <= m, m > 0")
        if max(low, high or 0) > MAX_REPEAT:
            self.fail(f"quantifier {{{inner}}}: bounds above {MAX_REPEAT} are not supported")
        self.pos = end + 1
        return low, high


# -- the program -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Program:
    """Instructions as three parallel tuples: ``op``, and operands ``a`` and ``b``."""

    op: tuple
    a: tuple
    b: tuple
    names: tuple  # variable index -> name

    def __len__(self) -> int:
        return len(self.op)


def compile_pattern(node, names: list[str]) -> Program:
    """Thompson's construction, alternatives and iterations in order of preference."""
    index = {n: i for i, n in enumerate(names)}
    code: list[list] = []

    def emit(op, a=-1, b=-1) -> int:
        code.append([op, a, b])
        return len(code) - 1

    def gen(n) -> None:
        if isinstance(n, Var):
            emit(VAR, index[n.name])
        elif isinstance(n, Seq):
            for p in n.parts:
                gen(p)
        elif isinstance(n, Alt):
            jumps = []
            for opt in n.options[:-1]:
                split = emit(SPLIT)
                code[split][1] = len(code)
                gen(opt)
                jumps.append(emit(JMP))
                code[split][2] = len(code)
            gen(n.options[-1])
            for j in jumps:
                code[j][1] = len(code)
        else:
            for _ in range(n.low):
                gen(n.body)
            if n.high is None:  # greedy loop: L: SPLIT body, out; body; JMP L
                loop = emit(SPLIT)
                code[loop][1] = len(code)
                gen(n.body)
                emit(JMP, loop)
                code[loop][2] = len(code)
            else:  # nested optional copies: (body (body ...)?)?
                splits = []
                for _ in range(n.high - n.low):
                    split = emit(SPLIT)
                    code[split][1] = len(code)
                    splits.append(split)
                    gen(n.body)
                for s in splits:
                    code[s][2] = len(code)

    gen(node)
    emit(MATCH)
    op, a, b = zip(*code, strict=True)
    return Program(tuple(op), tuple(a), tuple(b), tuple(names))

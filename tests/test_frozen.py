"""tidal.core.frozen.immutable and mutable against the dataclass each class was (issue 19: start-up).

Every class made with ``immutable`` or ``mutable`` on the SQL query path (expression and logical-plan
nodes, DECIMAL literals, translated expressions, MATCH_RECOGNIZE, the logical Query, SqlQuery, RunStats,
FileRead, the correlated-subquery helpers) is compared with a twin made by ``dataclasses.make_dataclass``
(``frozen=True`` for an immutable class) from the same fields: the same ``__init__`` signature (names,
order, defaults), and for the same arguments the same ``repr``, ``==``, ``hash`` (or the same error),
assignments and deletions, ``dataclasses.replace``, ``fields``, pickling and copies; a field with a
default factory gets a new value each time.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import itertools
import pickle
import random

import pytest

import tidal.expr.nodes as expr_nodes
import tidal.expr.sqldecimal as sqldecimal
import tidal.io.files as files
import tidal.sql.expressions as sql_expressions
import tidal.sql.logical.correlated as correlated
import tidal.sql.logical.match as match
import tidal.sql.logical.nodes as logical_nodes
import tidal.sql.query as sql_query
import tidal.sql.stats as stats
from tidal.core.frozen import FACTORY, Fields, Frozen, immutable, mutable, set_field

MODULES = (expr_nodes, logical_nodes, sqldecimal, sql_expressions, match, correlated, files, stats, sql_query)
CLASSES = [
    c
    for mod in MODULES
    for c in vars(mod).values()
    if isinstance(c, type) and issubclass(c, Fields) and c.__module__ == mod.__name__
]
VALUES = [0, 1, 1.0, "a", "b", None, (), ("a", 1), [1]]  # 1 == 1.0 (equal, same hash); a list is unhashable


def _twin(cls: type) -> type:
    """The dataclass ``cls`` was: the same fields, options, defaults and default factories."""
    specs = []
    for f in dataclasses.fields(cls):
        kw = {"compare": f.compare, "repr": f.repr}
        if f.default is not dataclasses.MISSING:
            kw["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            kw["default_factory"] = f.default_factory
        specs.append((f.name, object, dataclasses.field(**kw)))
    own = {k: cls.__dict__[k] for k in ("__repr__", "__str__") if k in cls.__dict__}  # (dataclass keeps a class's own)
    frozen = issubclass(cls, Frozen)
    twin = dataclasses.make_dataclass(cls.__name__, specs, frozen=frozen, namespace=own)
    twin.__qualname__ = cls.__qualname__
    return twin


def _outcome(fn):
    try:
        return ("value", fn())
    except Exception as exc:  # the same error type and message count as the same outcome
        return ("error", type(exc).__name__, str(exc))


def test_every_node_class_is_made_with_immutable():
    names = {c.__name__ for c in CLASSES}
    assert {"Col", "BinOp", "Case", "Cast", "Scan", "Project", "Aggregate", "AggCall", "Join", "Session"} <= names
    assert {"DecimalLiteral", "SqlExpr", "MatchRecognize"} <= names
    assert {"Query", "SqlQuery", "RunStats", "FileRead", "_Correlation", "_Pending"} <= names
    assert len(CLASSES) == 36, sorted(names)
    for mod in MODULES:  # no dataclass left on the query path: each would compile its methods at import
        left = [c for c in vars(mod).values() if dataclasses.is_dataclass(c) and c.__module__ == mod.__name__]
        assert all(issubclass(c, Fields) for c in left), left


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_class_behaves_as_its_dataclass(cls):
    twin = _twin(cls)
    ours, theirs = inspect.signature(cls), inspect.signature(twin)
    assert [(p.name, p.kind, repr(p.default)) for p in ours.parameters.values()] == [
        (p.name, p.kind, repr(p.default)) for p in theirs.parameters.values()
    ]
    assert cls.__match_args__ == twin.__match_args__
    n = len(dataclasses.fields(cls))
    pick = random.Random(n)
    rows = [tuple(v for v in (VALUES[(i + j) % len(VALUES)] for j in range(n))) for i in range(len(VALUES))]
    rows += [tuple(pick.choice(VALUES) for _ in range(n)) for _ in range(60)]
    made = [(cls(*args), twin(*args)) for args in rows]
    for (a, ta), (b, tb) in itertools.product(made[:25], repeat=2):
        assert (a == b) == (ta == tb) and (a != b) == (ta != tb)
        assert a != tb and (a == 1) == (ta == 1)  # another class: never equal
    for a, ta in made:
        assert repr(a) == repr(ta)
        assert _outcome(lambda a=a: hash(a)) == _outcome(lambda ta=ta: hash(ta))
        name = dataclasses.fields(cls)[0].name
        for change in (lambda x: setattr(x, name, 1), lambda x: delattr(x, name), lambda x: setattr(x, "other", 1)):
            a2, ta2 = copy.copy(a), copy.copy(ta)  # (a mutable class's instance changes)
            assert _outcome(lambda: change(a2)) == _outcome(lambda: change(ta2))
            assert _outcome(lambda: repr(a2)) == _outcome(lambda: repr(ta2))
        changed = dataclasses.replace(a, **{name: "z"})
        assert type(changed) is cls and repr(changed) == repr(dataclasses.replace(ta, **{name: "z"}))
        assert dataclasses.is_dataclass(a) and [f.name for f in dataclasses.fields(a)] == [
            f.name for f in dataclasses.fields(ta)
        ]
        for again in (pickle.loads(pickle.dumps(a)), copy.copy(a), copy.deepcopy(a)):
            assert type(again) is cls and repr(again) == repr(a) and again == a
    required = [p for p in ours.parameters.values() if p.default is inspect.Parameter.empty]
    first, second, theirs = cls(*VALUES[: len(required)]), cls(*VALUES[: len(required)]), twin(*VALUES[: len(required)])
    assert repr(first) == repr(theirs)  # the defaults used
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:  # a new value each time, as the factory makes it
            assert (
                getattr(first, f.name) is not getattr(second, f.name) and getattr(first, f.name) == f.default_factory()
            )
            assert ours.parameters[f.name].default is FACTORY


def test_the_class_doc_is_the_one_dataclass_writes():
    for cls in CLASSES:
        if cls.__doc__.startswith(cls.__name__ + "("):
            assert cls.__doc__ == cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")


def test_recursion_in_repr_shows_dots():
    @immutable
    class Box(Frozen):
        item: object

        def __init__(self, item):
            set_field(self, "item", item)

    items = []
    box = Box(items)
    items.append(box)
    assert repr(box) == "test_recursion_in_repr_shows_dots.<locals>.Box(item=[...])"


def test_immutable_refuses_what_it_cannot_do_alike():
    class NoInit(Frozen):
        x: int

    with pytest.raises(TypeError, match="its own __init__"):
        immutable(NoInit)

    class Hashed(Frozen):
        x: int = dataclasses.field(default=0, hash=False)

        def __init__(self, x=0):
            set_field(self, "x", x)

    with pytest.raises(TypeError, match="not supported"):
        immutable(Hashed)

    class Plain(Fields):
        x: int = 0

    with pytest.raises(TypeError, match="its own __init__"):
        mutable(Plain)
    with pytest.raises(TypeError, match="made with immutable"):
        mutable(Hashed)

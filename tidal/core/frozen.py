"""Records that cost nothing to define: dataclasses (frozen or not) without generated code.

``@dataclass(frozen=True)`` compiles six methods per class with ``exec`` when the module is
imported (``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``),
about 0.35 ms a class: the expression and logical-plan node modules (30 classes) cost ``tidal
query`` ~10 ms of start-up that way (issue 19). :func:`immutable` keeps the dataclass metadata
(``dataclasses.fields``, ``replace``, ``is_dataclass``, ``__match_args__``) and the frozen
dataclass's behaviour, with the methods written once here (:class:`Frozen`) and each class's
``__init__`` written in its own module:

* assigning or deleting an attribute raises :class:`dataclasses.FrozenInstanceError`;
* ``==`` compares the fields with ``compare=True`` as a tuple, only between instances of the same
  class (otherwise ``NotImplemented``); ``hash`` is the hash of that tuple;
* ``repr`` is ``Name(field=value, ...)`` over the fields with ``repr=True`` (``...`` on recursion).

:func:`mutable` does the same for a plain dataclass (:class:`Fields`: ``==`` and ``repr``, no
hash). A frozen class's ``__init__`` sets its fields with :data:`set_field` (``object.__setattr__``),
a mutable one's assigns them, in field order, with the same defaults its annotations declare
(``tests/test_frozen.py`` checks each class against the dataclass it replaces).
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from reprlib import recursive_repr

set_field = object.__setattr__


class _Factory:
    def __repr__(self) -> str:
        return "<factory>"  # as dataclass's own marker shows in a signature


FACTORY = _Factory()  # an __init__'s default for a field with a default_factory: made anew when it is this


class Fields:
    """The methods of a dataclass (``eq=True``), for classes decorated with :func:`mutable`: ``==`` over
    the compared fields, ``repr``; not hashable (as a dataclass with ``__eq__`` and not frozen)."""

    __slots__ = ()
    _compared = staticmethod(lambda self: ())  # the compared fields' values (set by the decorator)
    _shown: tuple[str, ...] = ()  # the fields repr shows (set by the decorator)

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._compared(self) == other._compared(other)
        return NotImplemented

    __hash__ = None

    @recursive_repr()
    def __repr__(self):
        return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._shown)})"


class Frozen(Fields):
    """The methods of a frozen dataclass, for classes decorated with :func:`immutable`."""

    __slots__ = ()

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self):
        return hash(self._compared(self))


def immutable(cls: type) -> type:
    """``cls`` (a :class:`Frozen` subclass with its own ``__init__``) as a frozen dataclass, no methods generated."""
    return _fields_of(cls, Frozen)


def mutable(cls: type) -> type:
    """``cls`` (a subclass of :class:`Fields` with its own ``__init__``) as a dataclass with no generated methods.

    Its ``__init__`` assigns each field (``self.x = x``); a field with a ``default_factory`` takes
    :data:`FACTORY` as its default and makes its value when given it (as the dataclass does)."""
    if issubclass(cls, Frozen):
        raise TypeError(f"{cls.__qualname__}: a Frozen class is made with immutable")
    return _fields_of(cls, Fields)


def _fields_of(cls: type, base: type) -> type:
    if "__init__" not in cls.__dict__ or not issubclass(cls, base):
        raise TypeError(f"{cls.__qualname__}: a subclass of {base.__name__} with its own __init__ is needed")
    undocumented = not cls.__doc__
    if undocumented:  # dataclass would write it with inspect.signature (a third of its time): written below
        cls.__doc__ = "-"
    cls = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(cls)
    if undocumented:  # as dataclass writes it: the class's name and its __init__'s signature
        shown = (
            f.name
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            else f"{f.name}={f.default!r}"
            if f.default_factory is dataclasses.MISSING
            else f"{f.name}=<factory>"
            for f in fields
        )
        cls.__doc__ = f"{cls.__name__}({', '.join(shown)})"
    if any(f.hash is not None for f in fields):
        raise TypeError(f"{cls.__qualname__}: field(hash=...) is not supported (hash and == use the compared fields)")
    compared = tuple(f.name for f in fields if f.compare)
    if len(compared) == 1:
        one = attrgetter(compared[0])
        cls._compared = staticmethod(lambda self: (one(self),))
    elif compared:
        cls._compared = staticmethod(attrgetter(*compared))
    cls._shown = tuple(f.name for f in fields if f.repr)
    return cls

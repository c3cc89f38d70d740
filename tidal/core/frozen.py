"""Immutable records that cost nothing to define: frozen dataclasses without generated code.

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

A class's ``__init__`` sets its fields with :data:`set_field` (``object.__setattr__``), in
field order, with the same defaults its annotations declare (``tests/test_frozen.py`` checks each
class against the dataclass it replaces).
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from reprlib import recursive_repr

set_field = object.__setattr__


class Frozen:
    """The methods of a frozen dataclass, for classes decorated with :func:`immutable`."""

    __slots__ = ()
    _compared = staticmethod(lambda self: ())  # the compared fields' values (set by immutable)
    _shown: tuple[str, ...] = ()  # the fields repr shows (set by immutable)

    def __setattr__(self, name, value):
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._compared(self) == other._compared(other)
        return NotImplemented

    def __hash__(self):
        return hash(self._compared(self))

    @recursive_repr()
    def __repr__(self):
        return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._shown)})"


def immutable(cls: type) -> type:
    """``cls`` (a subclass of :class:`Frozen` with its own ``__init__``) as a dataclass with no generated methods."""
    if "__init__" not in cls.__dict__ or not issubclass(cls, Frozen):
        raise TypeError(f"{cls.__qualname__}: an immutable class is a Frozen subclass with its own __init__")
    undocumented = not cls.__doc__
    if undocumented:  # dataclass would write it with inspect.signature (a third of its time): written below
        cls.__doc__ = "-"
    cls = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(cls)
    if undocumented:  # as dataclass writes it: the class's name and its __init__'s signature
        shown = (f.name if f.default is dataclasses.MISSING else f"{f.name}={f.default!r}" for f in fields)
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

"""Errors tidal raises. Each names what a person needs to act: the row, the field, the values.

One family, rooted at :class:`TidalError` (``tidal.errors`` re-exports it for users):

* :class:`ParseError`: the SQL text does not parse (the message shows the query with a caret);
* :class:`PlanError`: a query that cannot be built (an unknown field, a construct not supported,
  a checked limit such as expression depth or literal size); parse and type errors are plan errors;
* :class:`TidalTypeError`: an expression applied to values of the wrong type;
* :class:`InputError`: bad input data (file:line:column, row and field); :class:`LambdaError` when a
  user function raised on a row;
* :class:`StateError`: a checkpoint or state file that cannot be used (another plan's, corrupted);
* :class:`ResourceError`: the machine ran out of something (disk, memory) or an input is too large.

:class:`InternalError` is what the command line reports for anything else: a bug, to be reported.
"""

from __future__ import annotations


class TidalError(Exception):
    """Base class of tidal's errors."""


class InputError(TidalError):
    """Bad input to an ingress: a missing time field, a time going backwards, a bad value."""


class LambdaError(InputError):
    """A user lambda (or aggregate) raised on one row; the message names the row and its values."""


class PlanError(TidalError):
    """A query that cannot be built: an unknown field, an operator used on the wrong kind of stream."""


class ParseError(PlanError):
    """The query text does not parse; the message points at the place."""


class TidalTypeError(PlanError):
    """An expression cannot be evaluated on the types of values it is given."""


class StateError(TidalError):
    """A checkpoint or durable state that cannot be used: another plan's, or a damaged file."""


class ResourceError(TidalError):
    """Out of a resource (disk space, memory), or an input piece too large to handle."""


class InternalError(TidalError):
    """A failure that is tidal's fault, not the input's: please report it."""


class TidalWarning(UserWarning):
    """Something a person should know about a run that goes on: state growing without bound, say."""


def describe_row(row: dict, limit: int = 200) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in row.items())
    return text if len(text) <= limit else text[: limit - 3] + "..."

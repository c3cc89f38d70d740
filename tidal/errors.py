"""tidal's errors, one family: catch :class:`TidalError` for all of them.

``ParseError`` (SQL text), ``PlanError`` (a query that cannot be built; parse and type errors are
plan errors too), ``TidalTypeError`` (values of the wrong type), ``InputError`` (bad input data;
``LambdaError`` when a user function raised on a row), ``StateError`` (checkpoints and state files),
``ResourceError`` (disk, memory, input too large) and ``InternalError`` (a bug: please report it).
``TidalWarning`` says a run goes on but needs attention (a session that never closes, say).
Each message names the user's text: the SQL with a caret, file:line:column, the field and the row.
"""

from .core.errors import (
    InputError,
    InternalError,
    LambdaError,
    ParseError,
    PlanError,
    ResourceError,
    StateError,
    TidalError,
    TidalTypeError,
    TidalWarning,
)

__all__ = [
    "InputError",
    "InternalError",
    "LambdaError",
    "ParseError",
    "PlanError",
    "ResourceError",
    "StateError",
    "TidalError",
    "TidalTypeError",
    "TidalWarning",
]

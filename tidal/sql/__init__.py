"""SQL for event-time streams: tidal's dialect (sqlglot), a logical plan, rewrite rules, stream plans.

``tidal.sql.plan(text)`` returns a :class:`SqlQuery`; ``.result()`` is the batch answer,
``.changelog()`` the inserts and retractions, ``.explain()`` the plans.

The names below are imported when first used (PEP 562): planning a query and running a relational
one (:mod:`.relational`) load no numba; the stream engine's modules load when a plan needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ops.watermark import max_diff_watermarks, percentile_watermarks
    from .dialect import SqlSyntaxError
    from .expressions import SqlTypeError
    from .query import SqlQuery, plan

_LAZY = {
    "max_diff_watermarks": "..ops.watermark",
    "percentile_watermarks": "..ops.watermark",
    "SqlSyntaxError": ".dialect",
    "SqlTypeError": ".expressions",
    "SqlQuery": ".query",
    "plan": ".query",
}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'tidal.sql' has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["SqlQuery", "SqlSyntaxError", "SqlTypeError", "max_diff_watermarks", "percentile_watermarks", "plan"]

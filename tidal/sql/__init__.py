"""SQL for event-time streams: tidal's dialect (sqlglot), a logical plan, rewrite rules, stream plans.

``tidal.sql.plan(text)`` returns a :class:`SqlQuery`; ``.result()`` is the batch answer,
``.changelog()`` the inserts and retractions, ``.explain()`` the plans.
"""

from ..ops.watermark import max_diff_watermarks, percentile_watermarks
from .dialect import SqlSyntaxError
from .expressions import SqlTypeError
from .query import SqlQuery, plan

__all__ = ["SqlQuery", "SqlSyntaxError", "SqlTypeError", "max_diff_watermarks", "percentile_watermarks", "plan"]

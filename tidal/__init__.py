"""tidal: temporal stream analytics for Python.

A tempo-relational engine after Trill: events carry a sync time and an other time,
data moves in columnar batches with punctuations, and row-oriented lambdas are compiled
into columnar kernels. Start with :func:`from_arrow`, :func:`from_pandas` or
:func:`from_records`, chain operators on the returned :class:`Stream`, then call an egress
method such as ``to_arrow()`` or ``to_intervals()``.
"""

from . import agg, errors, tx
from .core.errors import InputError, LambdaError, PlanError, TidalError
from .core.time import INFINITY
from .io.egress import Event
from .plan.properties import Properties
from .stream.connectors import from_postgres, from_redis
from .stream.disordered import DisorderedStream, Streams
from .stream.kafka import to_kafka
from .stream.live import from_stdin, from_tail
from .stream.progress import show_progress
from .stream.sources import from_arrow, from_kafka, from_numpy, from_pandas, from_records
from .stream.streamable import Stream

__all__ = [
    "agg",
    "errors",
    "tx",
    "INFINITY",
    "DisorderedStream",
    "Event",
    "InputError",
    "LambdaError",
    "PlanError",
    "Properties",
    "Stream",
    "Streams",
    "TidalError",
    "from_arrow",
    "from_kafka",
    "from_numpy",
    "from_pandas",
    "from_postgres",
    "from_records",
    "to_kafka",
    "show_progress",
    "from_stdin",
    "from_tail",
    "from_redis",
]
__version__ = "0.1.0"

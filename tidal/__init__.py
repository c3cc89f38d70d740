"""tidal: temporal stream analytics for Python.

A tempo-relational engine after Trill: events carry a sync time and an other time,
data moves in columnar batches with punctuations, and row-oriented lambdas are compiled
into columnar kernels. Start with :func:`from_arrow`, :func:`from_pandas` or
:func:`from_records`, chain operators on the returned :class:`Stream`, then call an egress
method such as ``to_arrow()`` or ``to_intervals()``.

The names below are imported when first used (PEP 562), so ``import tidal`` and the command
line's start-up stay light: numba, pandas and Spark load only on the paths that use them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and editors
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

# public name -> the module that defines it (a module's own name: the module itself)
_LAZY = {
    "agg": ".agg",
    "errors": ".errors",
    "tx": ".tx",
    "InputError": ".core.errors",
    "LambdaError": ".core.errors",
    "PlanError": ".core.errors",
    "TidalError": ".core.errors",
    "INFINITY": ".core.time",
    "Event": ".io.egress",
    "Properties": ".plan.properties",
    "from_postgres": ".stream.connectors",
    "from_redis": ".stream.connectors",
    "DisorderedStream": ".stream.disordered",
    "Streams": ".stream.disordered",
    "to_kafka": ".stream.kafka",
    "from_stdin": ".stream.live",
    "from_tail": ".stream.live",
    "show_progress": ".stream.progress",
    "from_arrow": ".stream.sources",
    "from_kafka": ".stream.sources",
    "from_numpy": ".stream.sources",
    "from_pandas": ".stream.sources",
    "from_records": ".stream.sources",
    "Stream": ".stream.streamable",
}


def __getattr__(name: str):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'tidal' has no attribute {name!r}")
    module = importlib.import_module(where, __name__)
    value = module if where.rpartition(".")[2] == name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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

"""The four benchmark applications of seed 004 (TStream), each with a data generator, its
transactions on ``tidal.tx`` tables and a plain Python implementation of the same thing:
``gs`` (Grep and Sum), ``sl`` (Streaming Ledger), ``ob`` (Online Bidding), ``tp`` (Toll Processing).

Each module has ``generate(n, ...)`` (an Arrow table, time column ``t``), ``tables()``,
``access_for(tables)``, ``stream(source, tables, **transact_options)`` (the application over a
stream of those events, ``tidal.from_arrow(data, time="t")``) and ``python(data, tables)`` (a plain
loop, the oracle), returning per event what the stream outputs; ``python_rows(rows, tables)`` is
that loop over rows already in Python (the benchmark's Python peer: no Arrow conversion timed).
"""

from . import gs, ob, sl, tp

APPS = {"gs": gs, "sl": sl, "ob": ob, "tp": tp}
__all__ = ["APPS", "gs", "ob", "sl", "tp"]

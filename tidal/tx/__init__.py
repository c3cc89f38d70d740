"""Shared mutable state under transactions (seed 004, TStream): ``tidal.tx``.

Declare tables (``tx.Table``), then ``stream.transact(access, post=None, scheduler="chains")``:
each event runs ``access(e, t)``, a transaction of ``t.read``, ``t.write`` and ``t.read_modify``
operations on the tables, with the result of running them one by one in event-time order.
Schedulers: ``chains`` (TStream's operation chains, in parallel), ``serial``, ``lock``, ``pat``.
"""

from .engine import TransactionError
from .reference import reference
from .schedule import SCHEDULERS
from .table import Table
from .trace import TraceError

__all__ = ["SCHEDULERS", "Table", "TraceError", "TransactionError", "reference"]

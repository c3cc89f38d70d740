"""tidal on Spark: tidal plans run inside Spark tasks as a temporal map-reduce.

Spark reads, partitions, moves and sorts the data; tidal's operators run inside the tasks
(Trill embedded in SCOPE reducers, seed 001 §7.6). tidal never grows its own cluster
manager, shuffle or RPC. Requires the ``spark`` extra (``pip install 'tidal[spark]'``).

>>> import tidal, tidal.spark                                     # doctest: +SKIP
>>> clicks = tidal.spark.from_spark(df, time="ts")                # doctest: +SKIP
>>> q = clicks.where(lambda e: e.ad > 3).tumbling_window(60)      # doctest: +SKIP
>>> tidal.spark.to_spark(q, partitions=8)                         # doctest: +SKIP
"""

from .batch import SparkPlanner, explain, to_arrow, to_changelog, to_spark
from .session import add_master_option, resolve_master, spark_session
from .source import from_spark
from .sql import run_query_on_spark
from .streaming import read_output, start_streaming

__all__ = [
    "SparkPlanner",
    "add_master_option",
    "explain",
    "from_spark",
    "read_output",
    "resolve_master",
    "run_query_on_spark",
    "spark_session",
    "start_streaming",
    "to_arrow",
    "to_changelog",
    "to_spark",
]

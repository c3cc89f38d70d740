"""Spark sessions for tidal: where the master comes from and the settings tidal relies on.

The master is, in order: the ``master`` argument (the CLI's ``--spark-master``), the
``SPARK_MASTER`` environment variable, else ``local[*]``. Python workers run the same
interpreter as the driver, so they import the same tidal, numpy and pyarrow.

Spark never writes to this process's standard output, which carries query results (``tidal query
--engine spark``): the JVM starts with its standard output on our standard error (log4j's banner and
warnings, and anything the Python workers print, go there), and the console progress bars are off.
"""

from __future__ import annotations

import contextlib
import os
import sys

DEFAULT_MASTER = "local[*]"
ARROW_BATCH_ROWS = 100_000


def resolve_master(master: str | None = None) -> str:
    """The Spark master to use: the argument, else ``$SPARK_MASTER``, else ``local[*]``."""
    return master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER


def add_master_option(parser) -> None:
    """Add ``--spark-master`` to an argparse parser (default: ``$SPARK_MASTER`` or ``local[*]``)."""
    parser.add_argument(
        "--spark-master",
        default=None,
        help="Spark master URL for --engine spark (default: $SPARK_MASTER, else local[*])",
    )


def spark_session(
    master: str | None = None,
    *,
    shuffle_partitions: int | None = None,
    app_name: str = "tidal",
    config: dict[str, str] | None = None,
):
    """Get (or create) the active Spark session configured for tidal.

    An already running session is returned as it is (Spark allows one per process); the
    settings below apply only when this call starts it.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # workers must run the driver's interpreter (same tidal, numpy, pyarrow)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(resolve_master(master))
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # no stage progress bars on the console
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        # larger Arrow batches into Python: fewer calls into tidal's operators per partition
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
    )
    if shuffle_partitions is not None:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    with _stdout_to_stderr():  # the JVM starts here and keeps the standard output it inherits
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextlib.contextmanager
def _stdout_to_stderr():
    """Descriptor 1 points at standard error for the duration (what a child started now inherits)."""
    try:
        sys.stdout.flush()
    except (AttributeError, OSError, ValueError):
        pass
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no descriptor 1 or 2: nothing to redirect
        yield
        return
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)

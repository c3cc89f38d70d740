"""One local Spark session for the whole test run (starting one takes 5 to 10 seconds)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark():
    from ops import test_lifetime, test_selection
    from pyspark import cloudpickle

    import tidal.spark

    # the shared suite's helper functions travel to the workers by value, as a user's would by module
    cloudpickle.register_pickle_by_value(test_selection)
    cloudpickle.register_pickle_by_value(test_lifetime)
    session = tidal.spark.spark_session(
        "local[2]",
        shuffle_partitions=2,
        config={"spark.default.parallelism": "2", "spark.sql.adaptive.enabled": "false"},
    )
    yield session
    session.stop()

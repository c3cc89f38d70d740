import pytest

from .broker import Broker


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    """One tansu broker on a free loopback port for the session (topics: unique names per test)."""
    b = Broker(tmp_path_factory.mktemp("tansu") / "broker.log").start()
    yield b
    b.stop()


@pytest.fixture
def topic(broker, request):
    import re

    return re.sub(r"[^A-Za-z0-9]", "-", request.node.name)[:100]

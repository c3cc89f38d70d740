"""The one place the SQL layer adds an operator to a stream plan.

Every operator the translator appends goes through :func:`derive`, so a change in how plan nodes
are made is a change here.
"""

from __future__ import annotations

import pyarrow as pa

from ..stream.plan import OperatorNode, Properties
from ..stream.streamable import Stream


def derive(stream: Stream, label: str, factory, schema: pa.Schema, props: Properties) -> Stream:
    """``stream`` followed by the operator ``factory()`` makes (shown as ``label`` by explain), whose
    output has ``schema`` and ``props``."""
    return Stream(OperatorNode(label, (stream._node,), schema, props, factory))

"""DuckDB's types for integer ``+ - *`` (the type decides where the result overflows, an error as in DuckDB).

An integer literal is an INTEGER (a BIGINT beyond one) that takes the other operand's type where it fits in it
(``tinyint_col + 1`` is a TINYINT, ``smallint_col * 100000`` an INTEGER); two columns take Arrow's common type,
which is DuckDB's for signed integers. Mixing an unsigned integer with a signed one is refused by name.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .nodes import Const, Unary
from .sqlstrings import SqlTypeError


def int_operands(ev, node, a, b, sides=None):
    """``a`` and ``b`` for integer ``+ - *`` in DuckDB's type, where the result overflows. An integer literal is
    an INTEGER (a BIGINT beyond one) but takes the other operand's type where it fits in it: ``tinyint_col + 1``
    is a TINYINT (``+ 120`` overflows at 127), ``smallint_col * 100000`` an INTEGER. Refused: one operand
    unsigned and the other signed (DuckDB types ``UBIGINT + 1`` UBIGINT, ``UBIGINT + TINYINT`` HUGEINT).
    ``sides``: the operands' nodes where ``node`` is no BinOp (``a // b``, ``a % b``)."""
    if pa.types.is_unsigned_integer(a.type) != pa.types.is_unsigned_integer(b.type):
        raise SqlTypeError(
            f"{ev.sql(node)}: arithmetic of an unsigned integer ({a.type}) with a signed one ({b.type}) is not "
            "supported; CAST one of them (to BIGINT, say)"
        )
    left, right = sides or (node.left, node.right)
    la, lb = _int_literal(left), _int_literal(right)
    if la is None and lb is None or pa.types.is_unsigned_integer(a.type):
        return a, b
    if la is not None and lb is not None:
        target = max(_literal_type(la), _literal_type(lb), key=lambda t: t.bit_width)
    else:
        value, other = (la, b.type) if la is not None else (lb, a.type)
        info = np.iinfo(other.to_pandas_dtype())
        fits = info.min <= value <= info.max
        target = other if fits else max(other, _literal_type(value), key=lambda t: t.bit_width)
    return pc.cast(a, target), pc.cast(b, target)


def _int_literal(node) -> int | None:
    if isinstance(node, Unary) and node.op == "-" and (v := _int_literal(node.operand)) is not None:
        return -v
    ok = isinstance(node, Const) and isinstance(node.value, int) and not isinstance(node.value, bool)
    return node.value if ok else None


def _literal_type(value: int) -> pa.DataType:
    return pa.int32() if -(2**31) <= value < 2**31 else pa.int64()

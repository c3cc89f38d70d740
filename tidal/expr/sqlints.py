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


def comparable(a, b):
    """``a`` and ``b`` for a comparison: a UBIGINT beside a signed integer compares as a DECIMAL(20,0), which holds
    both (Arrow's common type, BIGINT, cannot hold a UBIGINT past 2**63 - 1: DuckDB compares them exactly)."""
    ints = [t for t in (a.type, b.type) if pa.types.is_integer(t)]
    if len(ints) == 2 and pa.uint64() in ints and any(pa.types.is_signed_integer(t) for t in ints):
        return pc.cast(a, pa.decimal128(20, 0)), pc.cast(b, pa.decimal128(20, 0))
    return a, b


def common_int(types) -> pa.DataType | None:
    """DuckDB's common type of the integer types among ``types`` (CASE, COALESCE, GREATEST/LEAST): the widest
    signed or unsigned one, and beside a signed one an unsigned integer needs the signed type of twice its
    width (UTINYINT and TINYINT meet in SMALLINT). None when no type is an integer. A UBIGINT beside a signed
    integer (DuckDB's HUGEINT) is refused by name."""
    ints = [t for t in types if pa.types.is_integer(t)]
    if not ints:
        return None
    signed = max((t.bit_width for t in ints if pa.types.is_signed_integer(t)), default=0)
    unsigned = max((t.bit_width for t in ints if pa.types.is_unsigned_integer(t)), default=0)
    if not signed:
        return pa.type_for_alias(f"uint{unsigned}")
    width = max(signed, 2 * unsigned)
    if width > 64:
        raise SqlTypeError(
            "a UBIGINT beside a signed integer (CASE, COALESCE, GREATEST, LEAST: DuckDB's HUGEINT) is not supported; "
            "CAST one of them"
        )
    return pa.type_for_alias(f"int{width}")


def narrow_literals(values: list, nodes) -> list:
    """``values`` of CASE, COALESCE, GREATEST or LEAST (``nodes``: their expressions) with each integer literal that
    fits the common type of the other integer values cast to that type, as DuckDB's literal takes it:
    ``coalesce(tinyint_col, 1)`` is a TINYINT (``+ 120`` overflows at 127), ``greatest(ubigint_col, 0)`` a UBIGINT;
    a literal that does not fit is an INTEGER (a BIGINT beyond one). Unchanged where a value is no integer (a
    DECIMAL's or a DOUBLE's common type is the caller's) or every one is a literal (an INTEGER)."""
    if nodes is None or len(nodes) != len(values):
        return values
    literals = [_int_literal(n) for n in nodes]
    typed = [v.type for v, lit in zip(values, literals, strict=True) if lit is None and not pa.types.is_null(v.type)]
    if not typed or len(typed) == len(values) or not all(pa.types.is_integer(t) for t in typed):
        return values
    target = common_int(typed)
    info = np.iinfo(target.to_pandas_dtype())
    fits = [lit is not None and info.min <= lit <= info.max for lit in literals]
    return [
        v if lit is None else pc.cast(v, target if fit else _literal_type(lit))
        for v, lit, fit in zip(values, literals, fits, strict=True)
    ]


def refuse_text_among_numbers(v: pa.DataType, values: pa.Array) -> pa.Array:
    """``values`` of ``x IN (...)``; a VARCHAR ``x`` among numbers (or a number among texts) is refused by name:
    DuckDB casts the text to the number's type ('01' IN (1) is true), Arrow's lookup compared texts ('01' <> '1')."""
    text = (pa.types.is_string(v) or pa.types.is_large_string(v), pa.types.is_string(values.type))
    numeric = [pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) for t in (v, values.type)]
    if (text[0] and numeric[1]) or (text[1] and numeric[0]):
        raise SqlTypeError(f"IN of a VARCHAR among numbers ({v} IN {values.type}) is not supported: CAST one side")
    return values

"""Type inference for the logical plan, and Arrow types in SQL's terms (for error messages)."""

from __future__ import annotations

import re

import pyarrow as pa
from sqlglot import exp

from ...core.errors import PlanError
from .nodes import AggCall

_SQL_TYPE_NAMES = {
    "int8": "TINYINT",
    "int16": "SMALLINT",
    "int32": "INTEGER",
    "int64": "BIGINT",
    "uint8": "UTINYINT",
    "uint16": "USMALLINT",
    "uint32": "UINTEGER",
    "uint64": "UBIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "VARCHAR",
    "large_string": "VARCHAR",
    "bool": "BOOLEAN",
    "date32[day]": "DATE",
    "null": "NULL",
    "binary": "BLOB",
}


def sql_type_name(t: pa.DataType | str) -> str:
    """The SQL name of an Arrow type (what a user of the dialect knows), e.g. ``int64`` -> BIGINT."""
    name = str(t)
    if name.startswith("timestamp"):
        return "TIMESTAMP WITH TIME ZONE" if "tz=" in name else "TIMESTAMP"
    if name.startswith("duration"):
        return "INTERVAL"
    if name.startswith("decimal"):
        return name.upper()
    return _SQL_TYPE_NAMES.get(name, name.upper())


def duckdb_type_name(t: pa.DataType | None) -> str | None:
    """The type as DuckDB's DESCRIBE names it: ``BIGINT[]``, ``STRUCT(a BIGINT, b VARCHAR)``, ``TIMESTAMP_MS``..."""
    if t is None:
        return None
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"{duckdb_type_name(t.value_type)}[]"
    if pa.types.is_fixed_size_list(t):
        return f"{duckdb_type_name(t.value_type)}[{t.list_size}]"
    if pa.types.is_struct(t):
        inner = (t.field(i) for i in range(t.num_fields))
        fields = ", ".join(f"{_ident(f.name)} {duckdb_type_name(f.type)}" for f in inner)
        return f"STRUCT({fields})"
    if pa.types.is_map(t):
        return f"MAP({duckdb_type_name(t.key_type)}, {duckdb_type_name(t.item_type)})"
    if pa.types.is_timestamp(t) and t.tz is None and t.unit != "us":
        return f"TIMESTAMP_{t.unit.upper()}"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_time(t):
        return "TIME"
    return sql_type_name(t)


def _ident(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def is_condition_type(t: pa.DataType) -> bool:
    """Whether a condition (WHERE, HAVING, ON) of this type is one DuckDB takes: a boolean, or what it
    casts to one implicitly (its untyped NULL, a number: true when not zero)."""
    return any(
        f(t)
        for f in (pa.types.is_boolean, pa.types.is_null, pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal)
    )


def user_message(message: str, labels: dict[str, str]) -> str:
    """An error message in the user's terms: internal (physical) column names, which bound
    expressions print quoted, become the SQL they stand for; Arrow's kernel wording and type
    names become SQL's."""
    text = re.sub(r'"((?:[^"]|"")+)"', lambda m: labels.get(m.group(1).replace('""', '"'), m.group(0)), message)
    kernel = re.search(r"Function '[^']*' has no kernel matching input types \(([^)]*)\)", text)
    if kernel:
        types = ", ".join(sql_type_name(t.strip()) for t in kernel.group(1).split(","))
        text = f"{text[: kernel.start()]}not defined for {types}{text[kernel.end() :]}"
    text = re.sub(r"as a scalar of type (\S+)", lambda m: f"as {sql_type_name(m.group(1))}", text)
    return re.sub(r" is (\S+), not boolean", lambda m: f" is {sql_type_name(m.group(1))}, not boolean", text)


def _key_type(a: pa.DataType | None, b: pa.DataType | None) -> pa.DataType | None:
    """The type both keys are compared in (numbers widen), or None when they are not comparable."""
    if a is None or b is None:
        return None
    if a == b:
        return a
    numeric = (pa.types.is_integer, pa.types.is_floating)
    if any(f(a) for f in numeric) and any(f(b) for f in numeric):
        return pa.float64() if pa.types.is_floating(a) or pa.types.is_floating(b) else pa.int64()
    return None


def _cast_to(e: exp.Expression, t: pa.DataType, target: pa.DataType) -> exp.Expression:
    return e if t == target else exp.Cast(this=e, to=exp.DataType.build(_sql_type(target)))


_NUMERIC_ONLY = {"average", "stddev", "variance", "percentile_cont", "variance_pop", "stddev_pop", "average_distinct"}


def checked_agg(call: AggCall, arg_type: pa.DataType | None, text: str) -> AggCall:
    """The aggregate call as DuckDB's binder takes it for its argument's type: ``median`` of a type
    with no midpoint (text, booleans) is the lower middle value; ``sum``/``avg``/``stddev``/... of a
    type they are not defined for is an error naming the call and the type. (``avg`` and ``median``
    of dates and times, which DuckDB answers with a TIMESTAMP, are not supported.)"""
    if arg_type is None or pa.types.is_null(arg_type):
        return call
    numeric = pa.types.is_integer(arg_type) or pa.types.is_floating(arg_type) or pa.types.is_decimal(arg_type)
    temporal = pa.types.is_timestamp(arg_type) or pa.types.is_date(arg_type)
    name = sql_type_name(arg_type)
    if call.function == "percentile_cont" and call.parameter == 0.5 and text.upper().startswith("MEDIAN("):
        if pa.types.is_interval(arg_type) or pa.types.is_duration(arg_type) or pa.types.is_time(arg_type):
            raise PlanError(f"{text}: MEDIAN of {name} (DuckDB interpolates it) is not supported")
        if not numeric and not temporal:  # DuckDB's median of a discrete type: quantile_disc(x, 0.5)
            return AggCall(call.output, "percentile_disc", call.argument, call.parameter)
    if call.function in _NUMERIC_ONLY and temporal and call.function in ("average", "percentile_cont"):
        raise PlanError(
            f"{text}: {'AVG' if call.function == 'average' else 'MEDIAN/quantile_cont'} of {name} "
            "(a TIMESTAMP in DuckDB) is not supported"
        )
    if call.function == "percentile_disc" and pa.types.is_date(arg_type):
        raise PlanError(f"{text}: quantile_disc of {name} is not supported (cast it to TIMESTAMP)")
    if (call.function in (*_NUMERIC_ONLY, "product") and not numeric) or (
        call.function in ("sum", "sum_distinct") and not (numeric or pa.types.is_boolean(arg_type))
    ):
        raise PlanError(f"{text}: no aggregate function matches the argument type {name}")
    return call


def _agg_type(call: AggCall, arg_type: pa.DataType | None) -> pa.DataType | None:
    if call.function == "list_agg":  # its argument packs the ORDER BY keys and the value, last
        return None if arg_type is None else pa.list_(arg_type.field(arg_type.num_fields - 1).type)
    if call.function in ("string_agg", "product"):
        return pa.string() if call.function == "string_agg" else pa.float64()
    if call.function in ("arg_min", "arg_max"):  # its argument packs (by, x): the result is x
        return None if arg_type is None or not pa.types.is_struct(arg_type) else arg_type.field(1).type
    if call.function in ("count", "count_not_null", "count_distinct"):
        return pa.int64()
    if call.function in ("average", "stddev", "variance", "percentile_cont", "variance_pop", "stddev_pop") or (
        call.function == "average_distinct"
    ):
        return pa.float64()
    if (
        call.function in ("sum", "sum_distinct")
        and arg_type is not None
        and (pa.types.is_integer(arg_type) or pa.types.is_boolean(arg_type))
    ):
        return pa.int64()
    return arg_type


def _sql_type(t: pa.DataType) -> str:
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_integer(t):
        return "BIGINT"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_string(t):
        return "VARCHAR"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_date(t):
        return "DATE"
    raise PlanError(f"no SQL type for {t}")

"""A local Parquet file's schema and columns without importing ``pyarrow.parquet``.

``pyarrow.parquet``'s Python layer (its filesystems, and OpenSSL through ``pyarrow.fs``) takes about
12 ms to import: more than ``tidal query`` spends reading a small file. Its ``ParquetFile`` wraps
pyarrow's reader class (``pyarrow._parquet.ParquetReader``), which opens a local path itself:
:func:`read_schema` and :func:`read_columns` use that class as ``ParquetFile`` does (the same options,
the same column selection: a name picks every leaf under it), so the schema and the table are the
ones ``pyarrow.parquet`` gives. Anything else (standard input's bytes) or a pyarrow release without
that class goes through ``pyarrow.parquet``.
"""

from __future__ import annotations

import pyarrow as pa


def open_reader(source):
    """pyarrow's reader opened on the local path ``source`` (as ``ParquetFile`` opens it), or None."""
    if not isinstance(source, str):
        return None
    try:
        from pyarrow._parquet import ParquetReader
    except ImportError:
        return None
    reader = ParquetReader()
    try:
        reader.open(source, arrow_extensions_enabled=True)  # ParquetFile's defaults
    except (TypeError, AttributeError):  # a pyarrow whose class takes other arguments: pyarrow.parquet reads it
        return None
    return reader


def read_schema(path: str) -> pa.Schema:
    """The file's Arrow schema (``pyarrow.parquet.read_schema``)."""
    reader = open_reader(path)
    if reader is None:
        import pyarrow.parquet as pq

        return pq.read_schema(path)
    try:
        schema = reader.schema_arrow
        refuse_intervals(schema, lambda: reader.metadata, path)
        refuse_infinities(schema, reader.metadata, path)
        return schema
    except AttributeError:  # (as above)
        import pyarrow.parquet as pq

        return pq.read_schema(path)
    finally:
        reader.close()


_INFINITE = {2**31 - 1, 2**63 - 1}  # DuckDB's 'infinity' date (int32) and timestamp (int64); minus: '-infinity'


def refuse_infinities(schema: pa.Schema, md, path: str) -> None:
    """DuckDB's ``'infinity'`` / ``'-infinity'`` dates and timestamps (the largest integers of their
    Parquet columns) are an error naming the column: tidal would read them as far-off times (their year,
    their arithmetic), not as DuckDB's infinities. Found by the row groups' statistics, without reading."""
    if not any(pa.types.is_date(t) or pa.types.is_timestamp(t) for t in schema.types):
        return
    for i in range(md.num_columns):
        column = md.schema.column(i)
        if column.physical_type not in ("INT32", "INT64") or not (
            "Date" in str(column.logical_type) or "Timestamp" in str(column.logical_type)
        ):
            continue
        for g in range(md.num_row_groups):
            stats = md.row_group(g).column(i).statistics
            if stats is not None and stats.has_min_max and {abs(stats.min_raw), abs(stats.max_raw)} & _INFINITE:
                from ..core.errors import InputError

                raise InputError(
                    f"{path}: column {column.path}: DuckDB's infinite dates and timestamps are not supported"
                )


def refuse_intervals(schema: pa.Schema, metadata, path: str) -> None:
    """A Parquet INTERVAL column (12 bytes: months, days, milliseconds), which pyarrow reads as raw
    bytes, is an error naming it rather than bytes read as a value."""
    if not any(pa.types.is_fixed_size_binary(t) and t.byte_width == 12 for t in schema.types):
        return
    md = metadata()
    for i in range(md.num_columns):
        column = md.schema.column(i)
        if column.converted_type == "INTERVAL" or str(column.logical_type) == "Interval":
            from ..core.errors import InputError

            raise InputError(f"{path}: column {column.path}: Parquet INTERVAL columns are not supported")


def _under(path: list[str], name: str) -> bool:
    """Whether the leaf at ``path`` is ``name`` or under it (``name`` a dotted prefix, as ParquetFile takes)."""
    return any(".".join(path[:k]) == name for k in range(1, len(path) + 1))


def column_indices(reader, columns: list[str]) -> list[int]:
    """The leaf indices ``reader`` (a ParquetReader) reads for the names ``columns``: a name selects
    each leaf under it (a struct's fields), in file order, as ``ParquetFile`` selects them."""
    paths = reader.column_paths
    return [i for name in columns for i, path in enumerate(paths) if _under(path, name)]


def read_columns(source, columns: list[str] | None) -> pa.Table:
    """The columns ``columns`` (None: all) of the file (``pyarrow.parquet.ParquetFile(source).read``)."""
    reader = open_reader(source)
    if reader is None:
        import pyarrow.parquet as pq

        return pq.ParquetFile(source).read(columns=columns)
    try:
        indices = column_indices(reader, columns) if columns is not None else None
        return reader.read_all(column_indices=indices, use_threads=True)
    except (TypeError, AttributeError):  # (as above)
        import pyarrow.parquet as pq

        return pq.ParquetFile(source).read(columns=columns)
    finally:
        reader.close()

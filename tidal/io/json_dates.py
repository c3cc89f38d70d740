"""JSON fields of dates, read as DuckDB reads them: a field whose values are all dates alone
(``YYYY-MM-DD``) is a DATE, and one that mixes such dates with timestamps is text (pyarrow's
reader infers a timestamp at midnight for both)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

_DATE_TEXT = r"^\d{4}-\d{2}-\d{2}$"


def json_dates(table: pa.Table, read_text) -> pa.Table:
    """``table`` (as pyarrow read it) with its date fields as DuckDB types them. Only top-level
    timestamp fields with a value at midnight are looked at again: ``read_text(options)`` reads the
    file once more with those fields as text (``pyarrow.json.ParseOptions`` given)."""
    import pyarrow.json as pj

    midnight = [
        f.name
        for f in table.schema
        if pa.types.is_timestamp(f.type)
        and f.type.tz is None
        and pc.any(pc.equal(pc.floor_temporal(table[f.name], unit="day"), table[f.name])).as_py()
    ]
    if not midnight:
        return table
    text = read_text(pj.ParseOptions(explicit_schema=pa.schema([pa.field(n, pa.string()) for n in midnight])))
    for name in midnight:
        dates = pc.match_substring_regex(text[name], _DATE_TEXT)
        i = table.column_names.index(name)
        if pc.all(dates).as_py() is not False:
            table = table.set_column(i, pa.field(name, pa.date32()), table[name].cast(pa.date32()))
        elif pc.any(dates).as_py():  # dates and timestamps mixed: DuckDB keeps the text
            table = table.set_column(i, pa.field(name, pa.string()), text[name])
    return table

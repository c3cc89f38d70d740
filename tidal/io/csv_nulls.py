"""The CSV fields read as NULL, apart from the scanner's kernels (importing this loads no numba)."""

CSV_NULLS = [""]  # DuckDB's only NULL field (pyarrow's default list also has NA, NULL, nan, N/A...)

"""Errors tidal raises. Each names what a person needs to act: the row, the field, the values."""

from __future__ import annotations


class TidalError(Exception):
    """Base class of tidal's errors."""


class InputError(TidalError):
    """Bad input to an ingress: a missing time field, a time going backwards, a bad value."""


class LambdaError(TidalError):
    """A user lambda raised on one row; the message names the row and its values."""


class PlanError(TidalError):
    """A query that cannot be built: an unknown field, an operator used on the wrong kind of stream."""


def describe_row(row: dict, limit: int = 200) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in row.items())
    return text if len(text) <= limit else text[: limit - 3] + "..."

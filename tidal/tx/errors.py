"""The error of a transaction that cannot run."""

from __future__ import annotations

from ..core.errors import InputError


class TransactionError(InputError):
    """An event's transaction cannot run: the message names the event (position and time)."""

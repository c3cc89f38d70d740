"""Malformed input from a connector: raise an error naming it, or count it and write it to a dead-letter file.

``where`` names the record as a person finds it again: a table and a row's key, a stream and an
entry id. With ``on_error="skip"`` the record is counted and, when a dead-letter file is given,
appended to it as one JSON object a line: ``{"source": where, "error": problem, "record": ...}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..core.errors import InputError, PlanError


@dataclass
class BadRows:
    """Where malformed rows go: raise (``fail``) or count and write to a dead-letter file (``skip``)."""

    on_error: str = "fail"
    dead_letter: str | None = None
    skipped: int = 0

    def __post_init__(self):
        if self.on_error not in ("fail", "skip"):
            raise PlanError(f"on_error must be 'fail' or 'skip', not {self.on_error!r}")

    def bad(self, where: str, problem: str, record: dict) -> None:
        if self.on_error == "fail":
            raise InputError(f"{where}: {problem} (on_error skip skips such rows)")
        self.skipped += 1
        if self.dead_letter:
            entry = {"source": where, "error": problem, "record": record}
            with open(self.dead_letter, "a") as f:
                f.write(json.dumps(entry, default=str) + "\n")

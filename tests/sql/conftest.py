"""Fixtures shared by the SQL tests."""

from __future__ import annotations

import pytest

from sql.data import write_files


@pytest.fixture
def in_dir(tmp_path, monkeypatch):
    """Run the test in an empty directory: queries name their files relative to it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def files_dir(in_dir):
    """Run the test in a directory holding the golden data files."""
    write_files(in_dir)
    return in_dir

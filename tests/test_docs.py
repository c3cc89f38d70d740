"""The docs cannot rot: every ```python block under docs/ runs, and the site builds.

Blocks of one page run in order in one namespace, in a fresh temporary directory. A block is
skipped only when the line before its fence says why: ``<!-- docs-test: skip (needs Spark and Java 17) -->``.
"""

from __future__ import annotations

import importlib.util
import linecache
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<reason>[^)]+)\)\s*-->\s*$")
PAGES = sorted(DOCS.rglob("*.md"))


def blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, skip reason or None) for each ```python block of ``page``."""
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1), skip.group("reason") if skip else None))
    return out


def test_every_page_has_been_found():
    assert len(PAGES) >= 15
    assert sum(len(blocks(p)) for p in PAGES) >= 30


def test_skip_markers_give_a_reason():
    for page in PAGES:
        for line in page.read_text().splitlines():
            if "docs-test" in line:
                assert SKIP.search(line), f"{page.relative_to(ROOT)}: a skip marker needs '(reason)': {line}"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_page_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    for line, code, skip in blocks(page):
        if skip:
            continue
        name = f"{page.relative_to(ROOT)}, block at line {line}"
        linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)  # tracebacks show the line
        exec(compile(code, name, "exec"), namespace)


def test_site_builds_strictly(tmp_path):
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs-material is not installed (pip install -e '.[docs]')")
    env = dict(os.environ)
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").exists()

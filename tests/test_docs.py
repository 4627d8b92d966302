"""The newcomer's path holds together: docs/README.md indexes every docs page, every relative link
in README.md, CONTRIBUTING.md and docs/ points at a file that exists, the README stays short, and
no tracked text cites notes or tracker items that are not in the repository."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from colocate import ROOT

DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
#: [text](target): inline Markdown links; images too ("![alt](target)").
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _pages() -> list[Path]:
    return sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", *DOCS.glob("*.md")])


def links(text: str) -> list[str]:
    """Targets of the inline links outside fenced code blocks and code spans."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out += _LINK.findall(_CODE_SPAN.sub("", line))
    return out


def _relative(target: str) -> str | None:
    """The file part of a relative link; None for a URL, a mail address or an anchor alone."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
        return None
    return target.split("#", 1)[0].split("?", 1)[0] or None


def test_links_are_found_outside_code_and_anchors_are_ignored():
    text = "see [a](a.md#x), [b](https://x.io), [c](#y)\n`[d](d.md)`\n```\n[e](e.md)\n```\n![f](img/f.png)\n"
    assert [_relative(t) for t in links(text)] == ["a.md", None, None, "img/f.png"]


def test_the_index_lists_every_docs_page():
    indexed = {(INDEX.parent / t).resolve() for t in map(_relative, links(INDEX.read_text())) if t}
    missing = [p.name for p in DOCS.glob("*.md") if p != INDEX and p.resolve() not in indexed]
    assert not missing, f"add these pages to docs/README.md, one line each under their group: {missing}"


def test_the_index_links_only_files_that_exist():
    targets = [t for t in map(_relative, links(INDEX.read_text())) if t]
    assert targets, "docs/README.md links no page"
    absent = [t for t in targets if not (INDEX.parent / t).is_file()]
    assert not absent, f"docs/README.md links missing files: {absent}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_an_existing_file(page):
    broken = [t for t in links(page.read_text()) if (f := _relative(t)) and not (page.parent / f).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links files that do not exist: {broken}"


def test_the_readme_stays_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move details into docs/ and link them"


def test_no_tracked_text_cites_tracker_items_or_seed_notes_outside_the_repository():
    pattern = r"\bthe seed\b|\bitems? [0-9]+\b|\b[Ii]ssue [0-9]+\b"
    proc = subprocess.run(["git", "grep", "-nIE", pattern, "--", ".", ":!dist", ":!vendor", ":!package-lock.json",
                           ":!policies/crds", ":!policies/schemas", ":!tests/test_docs.py"],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode == 128:
        pytest.skip("not a git checkout")
    assert proc.stdout == "", f"say what is meant instead of citing notes outside the repository:\n{proc.stdout}"

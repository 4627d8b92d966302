"""docs/architecture.md's table of packages and CONTRIBUTING's "Where things live" against the
tree: every package and top-level module of colocate/ is named, and every path named exists."""
from __future__ import annotations

import re

from colocate import ROOT


def _table_paths(text: str) -> set[str]:
    """The `paths` in the first column of the Markdown tables of ``text``."""
    out = set()
    for line in text.splitlines():
        if line.startswith("| `"):
            out.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return out


def _entries() -> set[str]:
    """colocate/'s folders (as ``colocate/x/``) and modules (as ``colocate/x.py``)."""
    return {f"colocate/{p.name}/" if p.is_dir() else f"colocate/{p.name}" for p in (ROOT / "colocate").iterdir()
            if not p.name.startswith(("_", ".")) and (p.is_dir() or p.suffix == ".py")}


def test_every_package_and_top_level_module_is_in_the_architecture_table():
    named = _table_paths((ROOT / "docs" / "architecture.md").read_text())
    # A row may name several siblings after the first: `colocate/review/`, `simulate/`, `report/`.
    expanded = set(named)
    for path in named:
        if "/" not in path.rstrip("/") and not path.startswith("colocate"):
            expanded.add(f"colocate/{path}")
    missing = sorted(e for e in _entries() if e not in expanded and e not in ("colocate/errors.py",))
    assert not missing, f"docs/architecture.md's package table does not name {missing}"


def test_every_path_the_tables_name_exists():
    for doc in ("docs/architecture.md", "CONTRIBUTING.md"):
        text = (ROOT / doc).read_text()
        section = text.split("## Where things live", 1)[-1] if doc == "CONTRIBUTING.md" else text
        for path in _table_paths(section):
            # A bare `simulate/` beside `colocate/review/` is colocate/simulate/.
            assert (ROOT / path).exists() or (ROOT / "colocate" / path).exists(), \
                f"{doc} names {path}, which is not in the tree"


def test_the_top_of_the_package_stays_small():
    """At most 17 entries at the top of colocate/: a new concern goes into a layer's folder."""
    entries = [p for p in (ROOT / "colocate").iterdir() if p.name != "__pycache__"]
    assert len(entries) <= 17, sorted(p.name for p in entries)

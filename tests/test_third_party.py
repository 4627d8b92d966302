"""Every vendored or derived file is accounted for, and the repository cites nothing it does not hold."""
from __future__ import annotations

import re
import subprocess

from colocate import ROOT

TABLE = (ROOT / "docs" / "third-party.md").read_text()


def _tracked(*pathspecs: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", *pathspecs], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_every_vendored_and_derived_file_is_in_the_third_party_table():
    files = [f for f in _tracked("policies/crds", "policies/schemas") if not f.endswith("README.md")]
    assert files, "no vendored files found: is this a git checkout?"
    missing = [f for f in files if f"`{f}`" not in TABLE]
    assert not missing, f"add these to docs/third-party.md with upstream repository, path, tag, commit and licence: {missing}"


def test_the_notice_carries_the_prometheus_operator_notice():
    notice = (ROOT / "NOTICE").read_text()
    assert "CoreOS Project\nCopyright 2015 CoreOS, Inc" in notice
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_no_tracked_file_cites_notes_outside_the_repository():
    pattern = re.compile(r"\b(FACTS|PITFALLS|MISSION)(\.md)?\b|\.\./shared")
    offenders = []
    for path in _tracked(":!dist", ":!package-lock.json", ":!tests/test_third_party.py"):
        file = ROOT / path
        try:
            text = file.read_text()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        offenders += [f"{path}:{n}" for n, line in enumerate(text.splitlines(), 1) if pattern.search(line)]
    assert not offenders, f"move these facts into docs/ with their upstream source: {offenders}"

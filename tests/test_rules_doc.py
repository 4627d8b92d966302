"""docs/rules.md is the rule files' table, as `colocate rules --format markdown` prints it."""
from __future__ import annotations

import json

from colocate import ROOT
from tests.helpers import colocate


def test_docs_rules_md_is_the_generated_table():
    printed = colocate("rules", "--format", "markdown").stdout
    assert (ROOT / "docs/rules.md").read_text() == printed, (
        "docs/rules.md is stale: run `colocate rules --format markdown > docs/rules.md`")


def test_every_rule_file_has_a_row():
    table = (ROOT / "docs/rules.md").read_text()
    ids = sorted(p.name.split("-", 1)[0] for p in (ROOT / "policies/rules").glob("COL*.yaml"))
    rows = [line.split(" | ", 1)[0].removeprefix("| ") for line in table.splitlines() if line.startswith("| COL")]
    assert rows == ids


def test_every_placeholder_is_filled():
    # A rule once lost its placeholders to a shell heredoc: "use one of the cluster's tiers (, )".
    for rule in json.loads(colocate("rules", "--format", "json").stdout):
        for field in ("message", "fix", "rationale"):  # only message and fix have placeholders
            text = rule[field]
            assert not any(b in text for b in ("(, ", ", )", "(,")), (rule["id"], field, text)
            assert field == "rationale" or "${" not in text, (rule["id"], field, text)

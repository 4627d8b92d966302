"""Every rule has fixtures that fail and pass it, run through the full check (kubeconform too)."""
from __future__ import annotations

from pathlib import Path

import pytest

from colocate import checker
from colocate.checker import formats as report

FIXTURES = Path(__file__).parent / "fixtures"
RULES = checker.load_rules()


def test_every_rule_has_a_failing_and_a_passing_fixture():
    for rule in RULES:
        names = [p.name for p in (FIXTURES / rule.id).glob("*.yaml")]
        assert any(n.startswith("fail") for n in names), f"{rule.id} has no fail*.yaml fixture"
        assert any(n.startswith("pass") for n in names), f"{rule.id} has no pass*.yaml fixture"


def test_every_fixture_folder_belongs_to_a_rule():
    ids = {r.id for r in RULES}
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} <= ids


def _fixtures(prefix: str):
    return sorted(p for p in FIXTURES.glob(f"*/{prefix}*.yaml"))


@pytest.mark.parametrize("fixture", _fixtures("fail"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_failing_fixture_is_reported_with_file_object_field_and_fix(fixture):
    result = checker.check([fixture])
    assert result.kubeconform.invalid == result.kubeconform.errors == result.kubeconform.skipped == 0
    found = [f for f in result.findings if f.rule == fixture.parent.name]
    assert found, f"{fixture.parent.name} did not fire on {fixture}"
    for finding in found:
        line = next(text.strip() for text in report.to_text(result).splitlines()
                    if text.strip().startswith(f"{finding.severity.upper()} {finding.rule} "))
        assert str(fixture) in line and f"{finding.kind}/" in line and finding.field and "(fix: " in line


@pytest.mark.parametrize("fixture", _fixtures("pass"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_passing_fixture_is_clean(fixture):
    result = checker.check([fixture])
    assert result.findings == [], report.to_text(result)


def test_rule_files_are_complete():
    for rule in RULES:
        assert rule.severity in ("error", "warning") and rule.rationale and rule.fix
        assert (rule.schema is None) != (rule.check is None)

"""Every rule has cases that fail and pass it, run through the full check (kubeconform too): its
fixture files (tests/policies/fixtures/<ID>/) and the examples in its rule file, alike."""
from __future__ import annotations

import os

import pytest

from colocate import ROOT, checker
from colocate.checker import formats as report
from tests.policies.rule_cases import FIXTURES, Case, cases

RULES = checker.load_rules()


def test_every_rule_has_a_failing_and_a_passing_case():
    have = {(c.rule, c.verdict) for c in cases(RULES)}
    for rule in RULES:
        for verdict in ("fail", "pass"):
            assert (rule.id, verdict) in have, (
                f"{rule.id} has no {verdict} case: add `examples: {{{verdict}: [...]}}` to {os.path.relpath(rule.file, ROOT)}, "
                f"or a tests/policies/fixtures/{rule.id}/{verdict}*.yaml")


def test_every_fixture_folder_belongs_to_a_rule():
    ids = {r.id for r in RULES}
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} <= ids


@pytest.mark.parametrize("case", cases(RULES, "fail"), ids=lambda c: c.id)
def test_failing_case_is_reported_with_file_object_field_and_fix(case: Case, tmp_path):
    fixture = case.path(tmp_path)
    result = checker.check([fixture])
    schema = result.kubeconform
    assert schema.invalid == schema.errors == schema.skipped == 0, f"{case.where}: kubeconform: {report.to_text(result)}"
    found = [f for f in result.findings if f.rule == case.rule]
    assert found, f"{case.where}: {case.rule} did not fire on it:\n{report.to_text(result)}"
    for finding in found:
        line = next(text.strip() for text in report.to_text(result).splitlines()
                    if text.strip().startswith(f"{finding.severity.upper()} {finding.rule} "))
        assert str(fixture) in line and f"{finding.kind}/" in line and finding.field and "(fix: " in line, (
            f"{case.where}: the finding names no file, object, field or fix: {line}")


@pytest.mark.parametrize("case", cases(RULES, "pass"), ids=lambda c: c.id)
def test_passing_case_is_clean(case: Case, tmp_path):
    result = checker.check([case.path(tmp_path)])
    assert result.findings == [], f"{case.where} is not clean under every rule:\n{report.to_text(result)}"


def test_rule_files_are_complete():
    for rule in RULES:
        assert rule.severity in ("error", "warning") and rule.rationale and rule.fix
        assert (rule.schema is None) != (rule.check is None)

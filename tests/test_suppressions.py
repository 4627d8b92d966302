"""Which findings a ``colocate.io/ignore`` annotation may silence (hostile-3 L10):
an error rule that guards the platform's promises (the tiers and their PriorityClasses, tier and
GPU isolation, the queue) is not the object's to waive, so an entry naming one silences nothing
and is reported (COL010); warnings and the other rules may be suppressed with a reason, and
``colocate rules`` says which is which."""
from __future__ import annotations

import json

import yaml

from colocate import ROOT, checker
from tests.helpers import colocate

RULES = {r.id: r for r in checker.load_rules()}

#: The promises the platform makes, by the rule that keeps each (docs/commands.md "Suppressing a finding").
GUARDS = {
    "COL004": "offline pods run at the offline class", "COL005": "offline pods stay off the online pool",
    "COL011": "the tier classes keep their order", "COL012": "training never preempts",
    "COL014": "the tier classes exist", "COL015": "the configuration decides the tiers",
    "COL017": "online-high is the online tier's", "COL070": "GPU visibility is the device plugin's",
    "COL102": "TFJobs run in an offline namespace", "COL118": "training is a governed kind",
    "COL121": "training goes through the queue",
}


def test_the_rules_that_keep_the_platforms_promises_cannot_be_suppressed():
    assert not [rid for rid in GUARDS if RULES[rid].suppressible], GUARDS


def test_every_warning_may_be_suppressed():
    assert [r.id for r in RULES.values() if r.severity == "warning" and not r.suppressible] == []


def _offline_batch(tmp_path, ignore: str):
    """hostile-3 L10: the offline class raised above the online one, its findings 'ignored'."""
    pc = yaml.safe_load((ROOT / "dist/apps/platform/priorityclass.offline-batch.yaml").read_text())
    pc["value"] = 10_000_000
    pc["metadata"]["annotations"]["colocate.io/ignore"] = ignore
    online = yaml.safe_load((ROOT / "dist/apps/platform/priorityclass.online-high.yaml").read_text())
    (tmp_path / "classes.yaml").write_text(yaml.safe_dump_all([pc, online]))
    return colocate("check", str(tmp_path), "--format", "json")


def test_an_entry_naming_a_guarding_rule_silences_nothing_and_is_reported(tmp_path):
    proc = _offline_batch(tmp_path, "COL011: we want training first; COL015: ours")
    result = json.loads(proc.stdout)
    rules = [f["rule"] for f in result["findings"]]
    assert proc.returncode == 1 and "COL011" in rules and "COL015" in rules, proc.stdout
    assert result["suppressed"] == [], result["suppressed"]
    col010 = [f["message"] for f in result["findings"] if f["rule"] == "COL010"]
    assert any("COL011 cannot be suppressed" in m for m in col010), col010


def test_a_suppressible_rule_is_still_silenced_with_its_reason(tmp_path):
    """The vendor case docs/commands.md gives: a platform pod whose operator sets its class."""
    fixture = ROOT / "tests/policies/fixtures/COL010/pass.yaml"
    proc = colocate("check", str(fixture), "--format", "json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and [s["rule"] for s in result["suppressed"]] == ["COL008"], proc.stdout


def test_colocate_rules_says_which_rules_may_be_suppressed():
    rows = json.loads(colocate("rules", "--format", "json").stdout)
    assert {r["id"]: r["suppressible"] for r in rows} == {r.id: r.suppressible for r in RULES.values()}
    text = colocate("rules").stdout.splitlines()
    for rid, rule in RULES.items():
        line = next(t for t in text if t.startswith(rid + " "))
        assert ("never-ignored" in line) != rule.suppressible, line
    markdown = colocate("rules", "--format", "markdown").stdout
    assert "| id | severity | category | enforced | suppressible | asks |" in markdown
    assert "| COL004 | error | scheduling | check, **admission** | no |" in markdown
    assert "| COL008 | error | scheduling | check | yes |" in markdown


def test_explain_says_whether_a_rule_may_be_suppressed():
    assert "Suppressible: no" in colocate("check", "--explain", "COL011").stdout
    assert "Suppressible: yes" in colocate("check", "--explain", "COL008").stdout

"""`colocate check` outputs: SARIF 2.1.0 valid against the OASIS schema, text grouped by file with
a summary by rule, --fail-on, --explain, rules as JSON, suppressions listed and counted."""
from __future__ import annotations

import json

import jsonschema

from colocate import ROOT
from tests.helpers import colocate

SCHEMA = json.loads((ROOT / "tests/fixtures/sarif/sarif-schema-2.1.0.json").read_text())
FIXTURES = ROOT / "tests/policies/fixtures"
WARNING_ONLY = FIXTURES / "COL053/fail.yaml"      # one warning
ERRORS = FIXTURES / "COL010/fail.yaml"            # COL008 and COL010 errors
SUPPRESSED = FIXTURES / "COL010/pass.yaml"        # COL008 suppressed with a reason


def test_sarif_is_valid_sarif_2_1_0_with_rules_levels_files_and_lines():
    proc = colocate("check", "--format", "sarif", str(ERRORS))
    assert proc.returncode == 1, proc.stderr
    sarif = json.loads(proc.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(sarif)
    run = sarif["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert rules["COL008"]["defaultConfiguration"]["level"] == "error" and "Fix:" in rules["COL008"]["help"]["text"]
    results = run["results"]
    live = [r for r in results if "suppressions" not in r]
    assert {r["ruleId"] for r in live} == {"COL008", "COL010"}
    for r in results:
        location = r["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"].startswith("tests/policies/fixtures/COL010/")
        assert location["region"]["startLine"] >= 1
        assert run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
    quiet = json.loads(colocate("check", "--format", "sarif", str(SUPPRESSED)).stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(quiet)
    (silenced,) = quiet["runs"][0]["results"]
    assert silenced["ruleId"] == "COL008" and "operator sets the priority class" in silenced["suppressions"][0]["justification"]


def test_text_groups_by_file_and_sums_up_by_severity_and_rule():
    proc = colocate("check", str(ERRORS), str(WARNING_ONLY), env={"NO_COLOR": "1"})
    lines = proc.stdout.splitlines()
    assert lines[0] == str(ERRORS) and lines[1].startswith(f"  ERROR COL008 {ERRORS}:")
    assert str(WARNING_ONLY) in lines and "\033[" not in proc.stdout
    assert lines[-1].endswith("2 errors, 1 warnings (COL008 1, COL010 1, COL053 1)")


def test_fail_on_decides_what_exit_1_means():
    assert colocate("check", str(WARNING_ONLY)).returncode == 0
    assert colocate("check", "--fail-on", "warning", str(WARNING_ONLY)).returncode == 1


def test_suppressed_findings_are_listed_and_counted_never_dropped():
    proc = colocate("check", "--format", "json", str(SUPPRESSED))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["findings"] == [] and doc["summary"]["suppressed"] == 1
    (entry,) = doc["suppressed"]
    assert entry["rule"] == "COL008" and entry["reason"].startswith("the vendor's operator")
    text = colocate("check", str(SUPPRESSED)).stdout
    assert "suppressed (1):" in text and text.rstrip().endswith("0 errors, 0 warnings; 1 suppressed")


def test_explain_rules_json_version_and_options_after_the_subcommand():
    explained = colocate("check", "--explain", "col050")
    assert explained.returncode == 0 and explained.stdout.startswith("COL050 pod-fits-a-pool (error, scheduling)")
    assert "tests/policies/fixtures/COL050/fail.tfjob-40-cpus.yaml" in explained.stdout
    assert colocate("check", "--explain", "COL999").returncode == 2
    rules = json.loads(colocate("rules", "--format", "json").stdout)
    assert {"COL001", "COL050", "COL304"} <= {r["id"] for r in rules}
    assert colocate("--version").stdout.startswith("colocate ")
    assert colocate("check", str(WARNING_ONLY), "--config", str(ROOT / "colocate.yaml")).returncode == 0
    assert "exit codes:" in colocate("check", "--help").stdout


def test_from_a_subfolder_check_says_which_dist_it_checked(tmp_path):
    proc = colocate("check", cwd=ROOT / "docs")
    assert proc.returncode == 0 and f"checking {ROOT / 'dist'}" in proc.stderr

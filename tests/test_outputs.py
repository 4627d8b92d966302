"""`colocate check` outputs: SARIF 2.1.0 valid against the OASIS schema, text grouped by file with
a summary by rule, --fail-on, --explain, rules as JSON, suppressions listed and counted."""
from __future__ import annotations

import hashlib
import json
import os
import pty
import subprocess

import jsonschema
import pytest

from colocate import ROOT, checker
from colocate.checker import manifests
from colocate.base.go_builds import environment
from tests.helpers import VENV_BIN, colocate

SCHEMA_FILE = ROOT / "tests/fixtures/sarif/sarif-schema-2.1.0.json"
SCHEMA = json.loads(SCHEMA_FILE.read_text())
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
    # In the order of their fields in the file: the annotation (COL010) above the pod spec (COL008).
    assert lines[0] == str(ERRORS) and lines[1].startswith(f"  ERROR COL010 {ERRORS}:")
    assert str(WARNING_ONLY) in lines and "\033[" not in proc.stdout
    assert lines[-1].endswith("2 errors (COL008 1, COL010 1), 1 warnings (COL053 1)")


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
    assert "suppressed (1):" in text and text.rstrip().endswith("0 errors, 0 warnings; 1 suppressed (COL008 1)")


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


def test_findings_carry_the_line_of_their_field():
    result = checker.check([ERRORS])
    lines = ERRORS.read_text().splitlines()
    by_rule = {f.rule: f for f in result.findings}
    # COL008: priorityClassName is missing, so the pod spec holding it; COL010: the annotation.
    assert lines[by_rule["COL008"].field_line - 1].strip() == "spec:"
    assert lines[by_rule["COL010"].field_line - 1].strip().startswith("colocate.io/ignore:")
    text = colocate("check", str(ERRORS)).stdout
    assert f"metadata.annotations[colocate.io/ignore] (line {by_rule['COL010'].field_line}): " in text
    doc = json.loads(colocate("check", "--format", "json", str(ERRORS)).stdout)
    assert {f["rule"]: f["field_line"] for f in doc["findings"]} == {r: f.field_line for r, f in by_rule.items()}


@pytest.mark.parametrize("field, line", [
    ("metadata.annotations[colocate.io/ignore]", 5),  # a key with dots, in brackets
    ("data.app.json", 8),  # a key with dots, dotted
    ("data.app.json panels[0]", 8),  # past a string (a dashboard's JSON): the deepest part found
    ("spec.containers[1].image", 12),
    ("spec.containers[1].resources.limits", 12),  # missing: the item that would hold it
    ("spec.containers[7]", 10),
    ("status", 0),
])
def test_field_lines(tmp_path, field, line):
    path = tmp_path / "x.yaml"
    path.write_text("---\nkind: A\n---\nmetadata:\n  annotations: {colocate.io/ignore: 'COL004: x'}\n"
                    "data:\n  app: {}\n  app.json: '{}'\n"
                    "spec:\n  containers:\n  - name: a\n  - image: b\n")
    assert manifests.field_lines(path, [(4, field)]) == [line]


def test_field_lines_of_list_items_and_json(tmp_path):
    listed = tmp_path / "list.yaml"
    listed.write_text("apiVersion: v1\nkind: List\nitems:\n- kind: A\n  spec:\n    x: 1\n- kind: B\n  spec:\n    x: 2\n")
    assert manifests.field_lines(listed, [(4, "spec.x"), (7, "spec.x")]) == [6, 9]
    as_json = tmp_path / "a.json"
    as_json.write_text('{\n  "kind": "A",\n  "spec": {\n    "x": 1\n  }\n}\n')
    assert manifests.field_lines(as_json, [(1, "spec.x")]) == [4]


def test_field_lines_compose_only_the_documents_asked_for(tmp_path):
    # Only the third and fifth documents are composed again; the second would not compose at
    # all, and the lines stay the file's. "---" inside a quoted scalar is not at column 0.
    path = tmp_path / "many.yaml"
    path.write_text("kind: A\nspec: {x: 1}\n---\nkind: B\nspec: [unclosed\n--- # c\nkind: C\n"
                    "data:\n  s: 'a\n    --- b'\nspec:\n  x: 3\n---\n---\nkind: E\n\nspec:\n  x: 5\n")
    assert manifests.field_lines(path, [(7, "spec.x"), (15, "spec.x"), (7, "data.s")]) == [12, 18, 9]


def test_field_lines_fall_back_to_the_whole_file(tmp_path):
    # A directive belongs to the document after it: composed alone, that document has none.
    path = tmp_path / "directive.yaml"
    path.write_text("%YAML 1.1\n---\nkind: A\nspec:\n  x: 1\n---\nkind: B\nspec:\n  x: 2\n")
    assert manifests.field_lines(path, [(3, "spec.x"), (7, "spec.x")]) == [5, 9]


def test_the_sarif_schema_is_upstreams_file():
    # oasis-tcs/sarif-spec sarif-2.1/schema/sarif-schema-2.1.0.json at e0583813 (SOURCE.md).
    digest = hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest()
    assert digest == "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"
    jsonschema.Draft4Validator.check_schema(SCHEMA)


def test_sarif_points_at_the_field_from_any_folder_and_describes_every_rule():
    proc = colocate("check", "--format", "sarif", str(ERRORS), cwd=ROOT / "docs")
    sarif = json.loads(proc.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(sarif)
    (run,) = sarif["runs"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == ROOT.as_uri() + "/"
    rules = run["tool"]["driver"]["rules"]
    assert {r["id"] for r in rules} == {r.id for r in checker.load_rules()} | {"SCHEMA", "INPUT"}
    assert not [r["id"] for r in rules if "${" in json.dumps(r)], "placeholders must be filled"
    lines = ERRORS.read_text().splitlines()
    for result in run["results"]:
        where = result["locations"][0]["physicalLocation"]
        assert where["artifactLocation"] == {"uri": "tests/policies/fixtures/COL010/fail.yaml", "uriBaseId": "%SRCROOT%"}
        related = result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"]
        assert lines[related - 1] == "apiVersion: apps/v1"  # the object
        assert where["region"]["startLine"] > related and result["partialFingerprints"]["colocateFinding/v1"]
    field_lines = {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in run["results"]}
    assert lines[field_lines["COL010"] - 1].strip().startswith("colocate.io/ignore:")


def test_sarif_of_a_file_outside_the_repository_uses_its_absolute_uri(tmp_path):
    copy = tmp_path / "x.yaml"
    copy.write_text(ERRORS.read_text())
    sarif = json.loads(colocate("check", "--format", "sarif", str(copy)).stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(sarif)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert uris == {copy.as_uri()}


def test_kubeconforms_findings_cannot_be_silenced(tmp_path):
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: training\n"
                    "  annotations:\n    colocate.io/ignore: 'SCHEMA: we know'\ndata:\n  a: 1\n")
    result = checker.check([path])
    assert {f.rule for f in result.findings} == {"SCHEMA", "COL010"} and result.suppressed == []


def _on_a_terminal(*args: str, **env: str) -> str:
    """colocate's output with stdout on a pseudo-terminal, as in an interactive shell."""
    main, child = pty.openpty()
    environ = {k: v for k, v in environment().items() if k != "NO_COLOR"} | env
    proc = subprocess.Popen([str(VENV_BIN / "colocate"), *args], cwd=ROOT, env=environ, stdout=child,
                            stderr=subprocess.DEVNULL)
    os.close(child)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    proc.wait()
    os.close(main)
    return out.decode()


def test_colour_on_a_terminal_unless_no_color():
    assert "\033[31mERROR\033[0m COL010" in _on_a_terminal("check", str(ERRORS))
    assert "\033[" not in _on_a_terminal("check", str(ERRORS), NO_COLOR="1")


def test_explain_and_rules_show_the_configurations_values(tmp_path):
    assert "Fix: set priorityClassName: offline-batch in the pod template" in colocate("check", "--explain", "COL004").stdout
    assert colocate("check", "--explain", "SCHEMA").stdout.startswith("SCHEMA kubernetes-schema (error, hygiene)")
    config = tmp_path / "colocate.yaml"
    config.write_text((ROOT / "colocate.yaml").read_text().replace("harbor.example.com", "registry.test.invalid"))
    for args in (("rules", "--format", "json", "--config", str(config)),
                 ("--config", str(config), "rules", "--format", "json")):
        rules = {r["id"]: r for r in json.loads(colocate(*args).stdout)}
        assert "registry.test.invalid" in rules["COL009"]["message"], args


def test_kubeconform_property_lists_are_sorted_so_output_is_the_same_each_run():
    # kubeconform lists unknown properties in Go map order, which differs between runs.
    from colocate.checker.findings import schema_message

    msg = "jsonschema: '/spec' does not validate: additional properties 'replicas', 'metadata' not allowed"
    assert schema_message({"msg": msg}, None, "1.28.0").endswith("properties 'metadata', 'replicas' not allowed")

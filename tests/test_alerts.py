"""The alert and recording rules we ship, checked and unit-tested by promtool itself.

The rule files under test are the ``.spec`` of the PrometheusRule objects the current source
synthesizes (promtool does not read the CRD wrapper), written to a temporary folder next to
copies of tests/promtool/*.test.yaml, which name them ``<PrometheusRule name>.yaml``.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import cdk8s
import pytest
import yaml

from colocate import ROOT
from colocate.constructs.prometheus_rule import PrometheusRule, PrometheusRuleProps, rules_file
from colocate.errors import PropError
from tests.helpers import yaml_load

UNIT_TESTS = ROOT / "tests" / "promtool"
DIST = ROOT / "dist"


#: The folder of the chart's own rules, rendered from kube-prometheus-stack: judged by COL200/COL202
#: and promtool's check, not unit-tested here (tests/test_upstream_promql_verdicts.py).
CHART_RULES = "apps/kube-prometheus-stack/"


def shipped_rule_files(tree: dict[str, str], chart: bool = False) -> dict[str, dict]:
    """``<PrometheusRule name>.yaml`` -> plain rules file, for every PrometheusRule of ours in
    ``tree`` (and the chart's with ``chart``)."""
    out = {}
    for path, text in tree.items():
        if not chart and CHART_RULES in path:
            continue
        obj = yaml_load(text) if path.endswith(".yaml") else {}
        if obj.get("kind") == "PrometheusRule":
            out[f"{obj['metadata']['name']}.yaml"] = rules_file(obj)
    return out


def _shipped_alerts(rendered: dict[str, str]) -> set[str]:
    return {r["alert"] for doc in shipped_rule_files(rendered).values() for g in doc["groups"] for r in g["rules"]
            if "alert" in r}


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("promtool")
    if not tool:
        pytest.fail("promtool not found on PATH: run make bootstrap (installs Debian's prometheus package)")
    return subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _write(files: dict[str, dict], folder: Path) -> list[str]:
    for name, doc in files.items():
        (folder / name).write_text(yaml.safe_dump(doc, sort_keys=False))
    return sorted(files)


def test_promtool_check_rules_passes_on_every_rule_file_in_dist(tmp_path):
    tree = {str(p): p.read_text() for p in DIST.rglob("prometheusrule.*.yaml")}
    names = _write(shipped_rule_files(tree, chart=True), tmp_path)
    assert names, "no PrometheusRule in dist/"
    proc = _promtool("check", "rules", *names, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # promtool's lint only (exit 0): kube-prometheus-stack 55.5.1 records
    # code_verb:apiserver_request_total:increase1h four times, once per status class (code=~"2.."
    # ... "5.."), which give disjoint series; promtool compares record names and static labels,
    # not the selectors, and calls them duplicates.
    linted = {n for n in names if f"Checking {n}\n  SUCCESS" not in proc.stdout}
    assert linted == {"kube-prometheus-stack-kube-apiserver-availability.rules.yaml"}, proc.stdout + proc.stderr
    assert "1 duplicate rule(s) found.\nMetric: code_verb:apiserver_request_total:increase1h" in proc.stdout + proc.stderr
    assert proc.stdout.count("SUCCESS") == len(names) - len(linted)


def test_promtool_unit_tests_pass_against_the_synthesized_rules(rendered, tmp_path):
    _write(shipped_rule_files(rendered), tmp_path)
    tests = []
    for path in sorted(UNIT_TESTS.glob("*.test.yaml")):
        shutil.copy(path, tmp_path / path.name)
        tests.append(path.name)
    proc = _promtool("test", "rules", *tests, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_alert_has_a_firing_and_a_silent_unit_test(rendered):
    firing: set[str] = set()
    silent: set[str] = set()
    for path in UNIT_TESTS.glob("*.test.yaml"):
        for group in yaml_load(path.read_text())["tests"]:
            for case in group.get("alert_rule_test") or []:
                (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    shipped = _shipped_alerts(rendered)
    assert shipped, "no alerts shipped"
    assert not shipped - firing, f"alerts without a firing case in tests/promtool: {sorted(shipped - firing)}"
    assert not shipped - silent, f"alerts without a silent case in tests/promtool: {sorted(shipped - silent)}"
    assert not (firing | silent) - shipped, f"unit tests for alerts we no longer ship: {sorted((firing | silent) - shipped)}"


def test_rules_are_picked_up_by_kube_prometheus_stack_after_its_crd(rendered):
    rules = [yaml_load(t) for p, t in rendered.items() if p.startswith("apps/observability/prometheusrule.")]
    assert len(rules) == 1
    meta = rules[0]["metadata"]
    assert meta["labels"]["release"] == "kube-prometheus-stack"
    assert meta["annotations"]["argocd.argoproj.io/sync-options"] == "SkipDryRunOnMissingResource=true"
    app = yaml_load(rendered["apps/argocd/application.argocd.colocate-observability.yaml"])
    assert app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-4"


# -- the PrometheusRule construct ------------------------------------------------------------

def _alert(**overrides) -> dict:
    rule = {"alert": "X", "expr": "up == 0", "for": "5m", "labels": {"severity": "warning"},
            "annotations": {"summary": "s", "description": "d", "hint": "h"}}
    return {**rule, **overrides}


def _synth(rules: list[dict], **props) -> dict:
    chart = cdk8s.Testing.chart()
    PrometheusRule(chart, "r", PrometheusRuleProps(**{"name": "r", "namespace": "monitoring",
                                                      "groups": [{"name": "g", "rules": rules}],
                                                      "labels": {"release": "kps"}, **props}))
    return cdk8s.Testing.synth(chart)[0]


def test_construct_emits_the_groups_with_selector_labels():
    obj = _synth([_alert(), {"record": "a:b:c", "expr": "sum(up)"}])
    assert obj["spec"]["groups"][0]["rules"][0]["alert"] == "X"
    assert obj["metadata"]["labels"] == {"release": "kps"}


@pytest.mark.parametrize("rules, props, prop, words", [
    ([_alert(expr="sum(up")], {}, "groups[0].rules[0] (X).expr", "not valid PromQL"),
    ([_alert(), _alert()], {}, "groups[0].rules[1] (X)", "defined twice"),
    ([{k: v for k, v in _alert().items() if k != "for"}], {}, "groups[0].rules[0] (X).for", "explicit duration"),
    ([_alert(labels={})], {}, "groups[0].rules[0] (X).labels.severity", "must be one of"),
    ([_alert(annotations={"summary": "s", "description": "d"})], {}, "groups[0].rules[0] (X).annotations.hint",
     "what to do"),
    ([_alert(record="y")], {}, "groups[0].rules[0]", "exactly one"),
    ([_alert()], {"labels": {}}, "labels", "ruleSelector"),
])
def test_construct_refuses_rules_it_cannot_ship(rules, props, prop, words):
    with pytest.raises(PropError) as err:
        _synth(rules, **props)
    assert err.value.prop == prop and words in err.value.reason

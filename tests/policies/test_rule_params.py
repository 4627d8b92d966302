"""Allow-lists live in the rule files (``params.allowed``), not in the Python checks: editing the
file changes the verdict, and a malformed entry is bad input naming the file and the key."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from colocate import checker, config
from colocate.checker import manifests
from colocate.checker.context import checked_context
from colocate.errors import InputError
from colocate.rules import files as rule_files

FIXTURES = Path(__file__).parent / "fixtures"


def _findings(rules_dir: Path, rule_id: str, fixture: Path) -> list[str]:
    rules = tuple(r for r in checker.load_rules(rules_dir) if r.id == rule_id)
    docs = manifests.load([fixture])
    return [f.field for f in checker.evaluate(rules, checker.Index(docs, checked_context(config.load(), docs, None, rules)))]


def _copy(tmp_path: Path) -> Path:
    rules = tmp_path / "rules"
    shutil.copytree(rule_files.RULES_DIR, rules)
    return rules


def test_the_device_plugin_runs_privileged_only_while_its_rule_file_allows_it(tmp_path):
    rules = _copy(tmp_path)
    fixture = FIXTURES / "COL500" / "pass.yaml"
    assert _findings(rules, "COL500", fixture) == []
    victim = next(rules.glob("COL500-*.yaml"))
    text = victim.read_text()
    victim.write_text(text[:text.index("params:")])
    assert [f for f in _findings(rules, "COL500", fixture) if f.endswith("securityContext.privileged")]


def test_a_capability_is_allowed_by_the_rule_file(tmp_path):
    rules = _copy(tmp_path)
    fixture = FIXTURES / "COL503" / "fail.net-admin.yaml"
    found = _findings(rules, "COL503", fixture)
    assert found
    image = next(d for d in manifests.load([fixture]) if d.kind != "Namespace")
    victim = next(rules.glob("COL503-*.yaml"))
    repository = _container_repository(image.obj)
    victim.write_text(victim.read_text() + f"    - image: {repository}\n      capabilities: [NET_ADMIN]\n"
                      "      reason: a test allows it, to see the rule file decide\n")
    assert _findings(rules, "COL503", fixture) == []


def _container_repository(obj: dict) -> str:
    from colocate.model.scheduling import ImageRef

    spec = obj["spec"]["template"]["spec"] if "template" in obj.get("spec", {}) else obj["spec"]
    return ImageRef.parse(spec["containers"][0]["image"]).repository


def test_a_malformed_allow_list_entry_is_bad_input(tmp_path):
    rules = _copy(tmp_path)
    victim = next(rules.glob("COL502-*.yaml"))
    victim.write_text(victim.read_text().replace("hostPaths: [/]", "hostPaths: [proc]", 1))
    with pytest.raises(InputError) as raised:
        rule_files.read_rules(rules)
    assert victim.name in str(raised.value) and "hostPaths" in str(raised.value)


def _without_entry(victim: Path, role: str) -> None:
    """Drop the allow-list entry of ClusterRole ``role`` (its line and its reason's) from the rule file."""
    lines = victim.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.strip() == f"- clusterRole: {role}")
    assert lines[start + 1].lstrip().startswith("reason:")
    victim.write_text("".join(lines[:start] + lines[start + 2:]))


def test_an_upstream_cluster_role_keeps_its_wildcards_only_while_its_rule_file_allows_it(tmp_path):
    rules = _copy(tmp_path)
    fixture = FIXTURES / "COL507" / "pass.yaml"
    assert _findings(rules, "COL507", fixture) == []
    _without_entry(next(rules.glob("COL507-*.yaml")), "argocd-application-controller")
    assert _findings(rules, "COL507", fixture) == ["rules[0].verbs", "rules[0].resources", "rules[1].verbs"]


def test_the_operator_role_is_named_after_the_configured_prometheus_release(tmp_path):
    from colocate.model.names import kps_fullname

    rules = _copy(tmp_path)
    role = f"{kps_fullname(config.load().cluster.prometheus_release)}-operator"
    fixture = tmp_path / "operator.yaml"
    fixture.write_text("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"
                       f"metadata: {{name: {role}}}\n"
                       "rules:\n- apiGroups: [apps]\n  resources: [statefulsets]\n  verbs: ['*']\n")
    assert _findings(rules, "COL507", fixture) == []
    _without_entry(next(rules.glob("COL507-*.yaml")), '"${kps_fullname}-operator"')
    assert _findings(rules, "COL507", fixture) == ["rules[0].verbs"]


def test_an_unknown_placeholder_in_a_cluster_role_is_bad_input(tmp_path):
    rules = _copy(tmp_path)
    victim = next(rules.glob("COL507-*.yaml"))
    victim.write_text(victim.read_text().replace("${kps_fullname}-operator", "${kps_fulname}-operator", 1))
    with pytest.raises(InputError) as raised:
        _findings(rules, "COL507", FIXTURES / "COL507" / "pass.yaml")
    assert victim.name in str(raised.value) and "clusterRole" in str(raised.value) and "kps_fulname" in str(raised.value)


def test_a_cluster_role_entry_grants_no_host_access(tmp_path):
    rules = _copy(tmp_path)
    victim = next(rules.glob("COL507-*.yaml"))
    victim.write_text(victim.read_text().replace("- clusterRole: argocd-server\n",
                                                 "- clusterRole: argocd-server\n      capabilities: [SYS_ADMIN]\n", 1))
    with pytest.raises(InputError) as raised:
        rule_files.read_rules(rules)
    assert victim.name in str(raised.value)

"""The generated ValidatingAdmissionPolicies (colocate/rules/admission.py, docs/admission.md), without
a cluster: which rules are enforced, what synth writes with the option on and off, and what
`colocate rules` says. The real API server judges them in tests/simulate/test_admission.py."""
from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from colocate import ROOT, app, checker, config
from colocate.rules import admission
from tests.helpers import colocate, yaml_load

DIST = ROOT / "dist"
RULES = checker.load_rules()
ENFORCED = admission.enforced(RULES)


def _dist_policies() -> list[dict]:
    return [yaml_load(p.read_text()) for p in sorted(DIST.glob("apps/platform/validatingadmissionpolic*.yaml"))]


def test_only_rules_that_judge_an_object_alone_are_enforced():
    assert ENFORCED
    for rule in ENFORCED:
        assert checker.judges_alone(rule), f"{rule.id} reads other objects: it cannot be a policy"
        # CEL over the object for rules of named kinds; over each pod spec or container otherwise.
        assert ("object" in rule.admission) == bool(admission.kinds_of(rule)), rule.id


def test_the_reference_enables_the_policies_and_dist_has_one_policy_and_binding_per_enforced_rule():
    assert config.load().admission_policies
    objects = _dist_policies()
    policies = {o["metadata"]["labels"][admission.RULE_LABEL]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    bindings = {o["spec"]["policyName"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    assert sorted(policies) == sorted(r.id for r in ENFORCED)
    for rule in ENFORCED:
        policy = policies[rule.id]
        assert policy["apiVersion"] == "admissionregistration.k8s.io/v1beta1"
        assert policy["spec"]["failurePolicy"] == "Fail"
        binding = bindings[policy["metadata"]["name"]]
        assert binding["spec"]["validationActions"] == (["Deny"] if rule.severity == "error" else ["Warn", "Audit"])
        resources = {(g, r) for rr in policy["spec"]["matchConstraints"]["resourceRules"]
                     for g in rr["apiGroups"] for r in rr["resources"]}
        assert ("kubeflow.org", "tfjobs") in resources  # every enforced rule judges TFJobs
        if not admission.kinds_of(rule):
            assert {("", "pods"), ("apps", "deployments"), ("batch", "cronjobs")} <= resources
        selector = policy["spec"]["matchConstraints"]["namespaceSelector"]
        if rule.scope in ("online", "offline"):
            assert selector == {"matchLabels": {"colocate.io/tier": rule.scope}}
        else:  # never kube-system
            assert selector["matchExpressions"][0]["values"] == ["kube-system"]
        validation = policy["spec"]["validations"][0]
        assert rule.id in validation["message"] and rule.id in validation["messageExpression"]
        assert "fix: " in validation["message"] and "${" not in json.dumps(policy)


def test_configuration_values_are_cel_literals():
    text = json.dumps(_dist_policies())
    cfg = config.load()
    assert "'offline-batch'" in text and f"'{cfg.registry_host}'" in text
    for registry in cfg.registry_proxy_projects:
        assert f"'{registry}'" in text


def test_the_control_plane_gets_the_api_server_flags_with_the_option_and_not_without():
    cluster = yaml_load((DIST / "control-plane/clusterconfiguration.yaml").read_text())
    assert cluster["apiServer"]["extraArgs"] == {"feature-gates": "ValidatingAdmissionPolicy=true",
                                                 "runtime-config": "admissionregistration.k8s.io/v1beta1=true"}
    off = app.render_files(app.build(dataclasses.replace(config.load(), admission_policies=False)))
    assert not [f for f in off if "validatingadmissionpolic" in f]
    assert cluster["controllerManager"]["extraArgs"]["feature-gates"] == "ValidatingAdmissionPolicy=true"
    cluster_off = yaml_load(off["control-plane/clusterconfiguration.yaml"])
    assert "apiServer" not in cluster_off and "feature-gates" not in cluster_off["controllerManager"]["extraArgs"]


def test_synth_is_deterministic_for_the_policies():
    files = app.render_files(app.build())
    for path in DIST.glob("apps/platform/validatingadmissionpolic*.yaml"):
        assert files[f"apps/platform/{path.name}"] == path.read_text()


def test_explain_says_a_rule_is_enforced_at_admission_and_how_it_differs():
    said = colocate("check", "--explain", "COL002").stdout
    assert "Admission: also enforced by the API server, ValidatingAdmissionPolicy colocate-col002-online-guaranteed" in said
    assert "differs from check: " in said
    assert "Admission:" not in colocate("check", "--explain", "COL051").stdout


def test_colocate_rules_marks_the_enforced_rules():
    lines = colocate("rules").stdout.splitlines()
    marked = {line.split()[0] for line in lines if line.split()[2] == "admission"}
    assert marked == {r.id for r in ENFORCED}
    listed = json.loads(colocate("rules", "--format", "json").stdout)
    assert {r["id"] for r in listed if r["admission"]} == marked


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_a_bad_admission_option_exits_2_naming_it(tmp_path, value):
    data = yaml_load((ROOT / "colocate.yaml").read_text())
    data["admission"] = {"policies": value}
    path = tmp_path / "colocate.yaml"
    path.write_text(yaml.safe_dump(data))
    proc = colocate("--config", str(path), "synth", "--outdir", str(tmp_path / "out"))
    assert proc.returncode == 2 and "admission.policies" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr

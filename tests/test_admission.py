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
        elif rule.admission.get("namespaces") == "tiers":
            assert selector == {"matchExpressions": [{"key": "colocate.io/tier", "operator": "In", "values": ["online", "offline"]}]}
        else:  # never kube-system
            assert "kube-system" in selector["matchExpressions"][0]["values"]
        for obj in (policy, binding):  # deleting the platform Application leaves admission on
            assert obj["metadata"]["annotations"] == {"argocd.argoproj.io/sync-options": "Delete=false"}
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


def _policy(rule_id: str) -> dict:
    return next(o for o in _dist_policies() if o["kind"] == "ValidatingAdmissionPolicy"
                and o["metadata"]["labels"][admission.RULE_LABEL] == rule_id)


def test_the_platform_namespaces_are_not_judged_by_the_workload_rules():
    """COL009 would stop stock Argo CD's dex (ghcr.io/dexidp/dex) and every add-on from another
    registry at its next restart: the platform's namespaces are left out, kube-system as before."""
    cfg = config.load()
    selector = _policy("COL009")["spec"]["matchConstraints"]["namespaceSelector"]
    exempt = selector["matchExpressions"][0]
    assert exempt["key"] == "kubernetes.io/metadata.name" and exempt["operator"] == "NotIn"
    assert {"kube-system", cfg.gitops.argocd_namespace, "monitoring", "kubeflow", "colocate-system"} <= set(exempt["values"])
    assert not {"online", "training", "default"} & set(exempt["values"])
    # Where a pod may use the online class is judged everywhere but kube-system.
    everywhere = _policy("COL017")["spec"]["matchConstraints"]["namespaceSelector"]
    assert everywhere["matchExpressions"][0]["values"] == ["kube-system"]


def test_kubectl_debug_is_judged_by_the_rules_that_read_ephemeral_containers():
    judged = set()
    for rule in ENFORCED:
        policy = _policy(rule.id)
        rules = policy["spec"]["matchConstraints"]["resourceRules"]
        if any("pods/ephemeralcontainers" in r["resources"] for r in rules):
            assert [r["operations"] for r in rules if "pods/ephemeralcontainers" in r["resources"]] == [["UPDATE"]]
            assert "spec.ephemeralContainers" in policy["spec"]["validations"][0]["expression"]
            judged.add(rule.id)
    # Image and GPU visibility; the resource rules leave them out (ephemeral containers have none).
    assert judged == {"COL009", "COL070"}


def test_an_update_that_leaves_what_a_rule_reads_unchanged_is_admitted():
    """A controller's write to an object that predates a rule (a ReplicaSet scaled, a finalizer
    removed, a TFJob paused) is admitted: the expression admits an UPDATE whose pod specs are
    unchanged, or, for an object rule, whose old object broke the rule too."""
    for rule in ENFORCED:
        expression = _policy(rule.id)["spec"]["validations"][0]["expression"]
        assert expression.startswith("(request.operation == 'UPDATE' && "), rule.id
        if "object" in rule.admission:
            assert "oldObject" in expression or "namespaceObject" in rule.admission["object"], rule.id
        else:
            assert "dyn(oldObject).spec" in expression, rule.id


def test_validation_actions_stage_a_rollout_and_default_to_deny(tmp_path):
    cfg = config.load()
    assert cfg.admission_actions == ("Deny",)
    rollout = dataclasses.replace(cfg, admission_actions=("Warn", "Audit"))
    files = app.render_files(app.build(rollout))
    bindings = [yaml_load(text) for name, text in files.items() if "validatingadmissionpolicybinding" in name]
    assert bindings and all(b["spec"]["validationActions"] == ["Warn", "Audit"] for b in bindings)
    data = yaml_load((ROOT / "colocate.yaml").read_text())
    for value, code in ((["Warn", "Audit"], 0), (["Audit"], 2), ("Deny", 2)):
        data["admission"] = {"policies": True, "validationActions": value}
        path = tmp_path / "colocate.yaml"
        path.write_text(yaml.safe_dump(data))
        proc = colocate("--config", str(path), "synth", "--outdir", str(tmp_path / "out"))
        assert proc.returncode == code, proc.stderr
        if code:
            assert "admission.validationActions" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr

"""The generated ValidatingAdmissionPolicies, judged by the real kube-apiserver 1.28 with the
feature gate and runtime-config dist/control-plane/ gives it (docs/admission.md): every fixture
of every enforced rule gets the same verdict from admission as from `colocate check`, and a
hand-applied TFJob or pod that breaks a rule is denied with the rule id. The reference syncing
through Argo CD with the policies on is the other simulation tests' (the reference enables them)."""
from __future__ import annotations

import json
import re
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from colocate import ROOT, checker
from colocate.rules import admission
from colocate.simulate import celcost, components, toolchain
from colocate.simulate.local_cluster import ControlPlane
from tests.helpers import yaml_load_all
from tests.policies.rule_cases import Case, cases, examples_tree

pytestmark = pytest.mark.simulate

DIST = ROOT / "dist"
RULES = checker.load_rules()
ENFORCED = {r.id: r for r in admission.enforced(RULES)}
DENIED = re.compile(r"ValidatingAdmissionPolicy '[^']+' with binding '[^']+' denied request: (COL\d{3}) ")
WARNED = re.compile(r"(COL\d{3}) [a-z0-9-]+: ")
#: Fixtures on which check and admission cannot agree, with the reason (the rule's
#: ``admission.differs`` says it in the rule file too). Asserted exactly: a new agreement fails too.
DIFFERENT: dict[str, str] = {
    "COL009/fail.yaml": "monitoring is a platform namespace, which COL009's policy leaves out (its add-ons come "
                        "from their own registries); check judges every file",
}

_TLS = ssl.create_default_context()
_TLS.check_hostname = False
_TLS.verify_mode = ssl.CERT_NONE


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml_load_all(path.read_text()) if isinstance(d, dict)]


def _dry_run(cp: ControlPlane, obj: dict) -> tuple[int, str, list[str]]:
    """Create ``obj`` with dryRun=All (admission runs, nothing is stored): (HTTP status, the API
    server's message, its warnings)."""
    meta = obj.get("metadata") or {}
    path = cp.path(obj["apiVersion"], obj["kind"], meta.get("namespace") or "default")
    request = urllib.request.Request(f"{cp.server}{path}?dryRun=All&fieldManager=parity", method="POST",
                                     data=json.dumps(obj).encode(),
                                     headers={"Authorization": f"Bearer {cp.token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=_TLS, timeout=30) as response:
            return response.status, "", response.headers.get_all("Warning") or []
    except urllib.error.HTTPError as error:
        body = json.loads(error.read() or b"{}")
        return error.code, body.get("message", ""), error.headers.get_all("Warning") or []


@pytest.fixture(scope="module")
def examples(tmp_path_factory) -> Path:
    """The folder the rule files' examples are written to, as fixture files (tests/policies/rule_cases.py)."""
    return examples_tree(RULES, tmp_path_factory.mktemp("rule-examples"))


@pytest.fixture(scope="module")
def cluster(examples):
    binaries = toolchain.ensure(log=lambda line: None)
    with ControlPlane(binaries) as cp:
        components.install_crds(cp, _docs(components.CRDS / "kubeflow.org_tfjobs.yaml"))
        # What the fixtures' objects need to exist: the reference's Namespaces (with their tier
        # labels) and PriorityClasses, then any other namespace a fixture names, unlabelled.
        for path in sorted(DIST.glob("apps/*/namespace.*.yaml")) + sorted(DIST.glob("apps/*/priorityclass.*.yaml")):
            for doc in _docs(path):
                cp.apply(doc)
        names = {n["metadata"]["name"] for n in cp.items("/api/v1/namespaces")}
        for case in cases(RULES):
            for doc in _docs(case.path(examples)):
                ns = (doc.get("metadata") or {}).get("namespace")
                # COL408's fixtures name namespaces the API server refuses: not made here.
                if ns and ns not in names and doc.get("kind") != "Namespace" and re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", ns):
                    cp.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
                    names.add(ns)
        for path in sorted(DIST.glob("apps/platform/validatingadmissionpolicy*.yaml")):
            for doc in _docs(path):
                cp.apply(doc)
        _wait_enforced(cp, examples)
        yield cp


def _wait_enforced(cp: ControlPlane, examples: Path, timeout: float = 60.0) -> None:
    """Until each policy's admission controller has compiled it: the first failing case of
    every enforced error rule is denied by some policy."""
    probes = [_docs(cases([r], "fail")[0].path(examples)) for r in ENFORCED.values() if r.severity == "error"]
    deadline = time.monotonic() + timeout
    while True:
        pending = [p for p in probes if not any(DENIED.search(_dry_run(cp, d)[1]) for d in p if d.get("kind") != "Namespace")]
        if not pending or time.monotonic() > deadline:
            return
        time.sleep(1)


def _cases() -> list[Case]:
    """Every case of every enforced rule: its fixture files and its rule file's examples."""
    return sorted(cases(ENFORCED.values()), key=lambda c: c.id)


def _admission(cp: ControlPlane, fixture: Path) -> tuple[set[str], set[str], list[str]]:
    """(rule ids a policy denied an object of the fixture with, rule ids warned, the messages)."""
    denied, warned, messages = set(), set(), []
    for doc in _docs(fixture):
        if doc.get("kind") == "Namespace":
            cp.apply(doc)  # real: the fixture's other objects live in it
            continue
        status, message, warnings = _dry_run(cp, doc)
        found = DENIED.search(message)
        if status >= 400:
            assert found, f"{fixture}: the API server refused {doc['kind']} for another reason: {status} {message}"
            denied.add(found[1])
            messages.append(message)
        for warning in warnings:
            warned.update(WARNED.findall(warning))
            messages.append(warning)
    return denied, warned, messages


def test_policies_are_all_served_and_type_check_without_a_warning(cluster):
    """kube-controller-manager (with the gate) type-checks each policy against every kind it
    matches, the TFJob CRD's schema included, and writes the warnings into status.typeChecking."""
    deadline = time.monotonic() + 60
    while True:
        policies = cluster.items("/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies")
        if all("typeChecking" in (p.get("status") or {}) for p in policies) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert sorted(p["metadata"]["labels"][admission.RULE_LABEL] for p in policies) == sorted(ENFORCED)
    for policy in policies:
        status = policy.get("status") or {}
        assert "typeChecking" in status, f"{policy['metadata']['name']} was never type-checked"
        assert not status["typeChecking"].get("expressionWarnings"), status["typeChecking"]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c.id)
def test_check_and_admission_agree(cluster, examples, case):
    """Denied exactly when check reports an enforced error rule, by one of those rules (the API
    server names the first denying policy only); warned for every enforced warning rule."""
    fixture = case.path(examples)
    result = checker.check([fixture])
    errors = {f.rule for f in result.findings if f.rule in ENFORCED and f.severity == "error"}
    warnings = {f.rule for f in result.findings if f.rule in ENFORCED and f.severity == "warning"}
    denied, warned, messages = _admission(cluster, fixture)
    key = case.id
    agree = (bool(denied) == bool(errors) and denied <= errors
             and (not denied or len(errors) > 1 or denied == errors) and warnings <= warned)
    if key in DIFFERENT:
        assert not agree, f"{key} now agrees: remove it from DIFFERENT"
        return
    assert agree, (f"{case.where}: check {sorted(errors)} errors, {sorted(warnings)} warnings; admission denied "
                   f"{sorted(denied)}, warned {sorted(warned)}: {messages}")
    rule = case.rule
    if case.verdict == "fail" and ENFORCED[rule].severity == "error" and errors == {rule}:
        assert denied == {rule}
        assert ENFORCED[rule].fix.split()[0] in messages[0] and "field " in messages[0]


def test_every_enforced_rule_denies_one_of_its_failing_fixtures_by_name(cluster, examples):
    """Each enforced rule, on at least one of its failing cases, is the rule the API server names."""
    for rid, rule in ENFORCED.items():
        named = set()
        for case in cases([rule], "fail"):
            denied, warned, _ = _admission(cluster, case.path(examples))
            named |= denied | warned
        assert rid in named, f"{rid}: no failing fixture was denied or warned by name"


TFJOB = {
    "apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "hand-applied", "namespace": "training"},
    "spec": {"runPolicy": {"cleanPodPolicy": "All"}, "tfReplicaSpecs": {
        "Worker": {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {
            "priorityClassName": "offline-batch", "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "tensorflow", "image": "harbor.example.com/ml/tf:2.11.0",
                            # A GPU pool admits it: without a GPU it hides the node's (COL070).
                            "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}],
                            "resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                                          "limits": {"cpu": "2", "memory": "2Gi"}}}]}}}}},
}


def _kubectl_apply(cp: ControlPlane, obj: dict) -> subprocess.CompletedProcess:
    """``kubectl apply -f -``: what an engineer does by hand."""
    return subprocess.run([str(toolchain.BIN / "kubectl"), f"--kubeconfig={cp.kubeconfig}", "apply", "-f", "-"],
                          input=yaml.safe_dump(obj), text=True, capture_output=True, timeout=60)


def _with(obj: dict, path: str, value) -> dict:
    out = json.loads(json.dumps(obj))
    *keys, last = path.split(".")
    node = out
    for key in keys:
        node = node[key]
    node[last] = value
    return out


@pytest.mark.parametrize("change,rule", [
    ("spec.tfReplicaSpecs.Worker.template.spec.priorityClassName", "COL004"),
    ("spec.runPolicy.schedulingPolicy", "COL109"),
    ("spec.tfReplicaSpecs.PS", "COL103"),
], ids=["online-high-template", "online-high-gang", "ps-with-gpu"])
def test_hand_applied_tfjob_is_denied_with_the_rule_id(cluster, change, rule):
    if change.endswith("priorityClassName"):
        job = _with(TFJOB, change, "online-high")
    elif change.endswith("schedulingPolicy"):
        job = _with(TFJOB, change, {"priorityClass": "online-high"})
    else:
        ps = json.loads(json.dumps(TFJOB["spec"]["tfReplicaSpecs"]["Worker"]))
        ps["template"]["spec"]["containers"][0]["resources"] = {
            "requests": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1"},
            "limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "1"}}
        job = _with(TFJOB, change, ps)
    done = _kubectl_apply(cluster, job)
    assert done.returncode != 0 and rule in done.stderr and "denied request" in done.stderr, done
    assert _kubectl_apply(cluster, TFJOB).returncode == 0  # the same job, rule kept, is created


def test_online_pod_with_cpu_limit_above_request_is_denied(cluster):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "burst", "namespace": "online"},
           "spec": {"priorityClassName": "online-high", "containers": [{
               "name": "server", "image": "harbor.example.com/ml/server:1.0.0",
               "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}],
               "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}]}}
    done = _kubectl_apply(cluster, pod)
    assert done.returncode != 0 and "COL002" in done.stderr and "denied request" in done.stderr, done
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2000m"  # == 2 once the API server parses it
    done = _kubectl_apply(cluster, pod)
    assert done.returncode == 0, done


def test_reference_dist_is_admitted_whole(cluster):
    """Every object of the reference (besides the kubeadm and node files, which are no API
    objects) is admitted by the API server with the policies on: dry-run, in sync-wave order."""
    refused = []
    for path in sorted(DIST.glob("apps/*/*.yaml")):
        for doc in _docs(path):
            if "test" in ((doc["metadata"].get("annotations") or {}).get("helm.sh/hook") or ""):
                continue  # a Helm test hook: Argo CD never applies it (gitops-engine pkg/sync/hook)
            try:
                cluster.path(doc["apiVersion"], doc["kind"])
            except Exception:
                continue  # a kind whose CRD this control plane does not install (Argo CD, Prometheus)
            status, message, _ = _dry_run(cluster, doc)
            if status >= 400 and status != 409:
                refused.append(f"{path.relative_to(DIST)}: {status} {message}")
    assert not refused, "\n".join(refused)


def test_every_policy_costs_far_less_than_the_api_server_limits():
    """The API server's own CEL code (bin/celcost, k8s.io/apiserver at the pinned version) on every
    reference object, every fixture, and TFJobs and Deployments far larger than any we write, whole
    and broken everywhere: no error, and each policy under a tenth of the per-expression limit."""
    results = celcost.measure(*celcost.reference_cases())
    assert not [r for r in results if r["errors"]], [r for r in results if r["errors"]][:3]
    # The rules' policies, and the one that keeps the resubmitter's annotations its own.
    assert {r["policy"] for r in results} == {admission.policy_name(r) for r in ENFORCED.values()} | {
        "colocate-resubmitter-annotations"}
    for r in results:
        assert r["limit"] == celcost.PER_CALL_LIMIT and r["budget"] == celcost.BINDING_BUDGET
        assert r["validationCost"] + r["messageCost"] < celcost.PER_CALL_LIMIT / 10, r
    # celcost judges as the API server and check do on the fixtures: the broken ones fail.
    assert not [r for r in results if r["object"].endswith("/large") and not r["allowed"]]
    assert {r["policy"] for r in results if r["object"].endswith("/large-broken") and not r["allowed"]} >= {
        "colocate-col004-offline-priority", "colocate-col009-image-from-mirror", "colocate-col002-online-guaranteed",
        "colocate-col070-gpu-less-container-hides-gpus"}


def _patch(cp: ControlPlane, path: str, body: dict, content_type: str) -> tuple[int, str]:
    """(HTTP status, the API server's message) of a PATCH."""
    try:
        cp.request("PATCH", path, body, content_type=content_type)
        return 200, ""
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}").get("message", "")


NOTEBOOK = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "notebook-debugged", "namespace": "training"},
            "spec": {"priorityClassName": "offline-batch", "terminationGracePeriodSeconds": 30, "containers": [{
                "name": "notebook", "image": "harbor.example.com/ml/tf:2.15.0-gpu",
                "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}],
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "1", "memory": "2Gi"}}}]}}


@pytest.mark.parametrize("debug,rule", [
    ({"image": "ghcr.io/example/debug:1.0.0", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}, "COL009"),
    ({"image": "harbor.example.com/ml/debug:1.0.0"}, "COL070"),
    ({"image": "harbor.example.com/ml/debug:1.0.0", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}, "COL070"),
    ({"image": "harbor.example.com/ml/debug:1.0.0", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]}, None),
], ids=["unmirrored-image", "sees-every-gpu", "asks-for-every-gpu", "allowed"])
def test_kubectl_debug_is_judged(cluster, debug, rule):
    """`kubectl debug` adds an ephemeral container through pods/ephemeralcontainers, which a policy
    on pods alone never saw."""
    cluster.apply(NOTEBOOK)
    path = cluster.path("v1", "Pod", "training", NOTEBOOK["metadata"]["name"]) + "/ephemeralcontainers"
    name = f"debugger-{rule or 'ok'}-{len(json.dumps(debug))}".lower()
    status, message = _patch(cluster, path, {"spec": {"ephemeralContainers": [{"name": name, **debug}]}},
                             "application/strategic-merge-patch+json")
    if rule is None:
        assert status == 200, message
    else:
        found = DENIED.search(message)
        assert status == 403 and found and found[1] == rule, (status, message)


def test_controllers_may_still_write_an_object_that_predates_a_rule(cluster):
    """A Deployment created before its namespace joined a tier breaks COL070 (no
    NVIDIA_VISIBLE_DEVICES=void). Scaling it, as its controller does, is admitted; changing its
    template is judged like a creation."""
    ns = "joins-a-tier-late"
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "old-batch", "namespace": ns},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "old-batch"}}, "template": {
                      "metadata": {"labels": {"app": "old-batch"}}, "spec": {
                          "priorityClassName": "offline-batch", "terminationGracePeriodSeconds": 30, "containers": [{
                              "name": "batch", "image": "harbor.example.com/ml/batch:1.0.0",
                              "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                            "limits": {"cpu": "1", "memory": "1Gi"}}}]}}}}
    cluster.apply(deployment)
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"colocate.io/tier": "offline"}}})
    path = cluster.path("apps/v1", "Deployment", ns, "old-batch")
    merge = "application/merge-patch+json"
    deadline, attempt = time.monotonic() + 60, 0
    while True:  # until the policies see the new label (the API server's namespace informer)
        attempt += 1
        env = [{"name": "ATTEMPT", "value": str(attempt)}]
        status, message = _patch(cluster, path, {"spec": {"template": {"spec": {"containers": [
            {"name": "batch", "env": env}]}}}}, "application/strategic-merge-patch+json")
        if status != 200 or time.monotonic() > deadline:
            break
        time.sleep(1)
    found = DENIED.search(message)
    assert status == 403 and found and found[1] == "COL070", (status, message)
    status, message = _patch(cluster, path, {"spec": {"replicas": 3}}, merge)
    assert status == 200, message
    status, message = _patch(cluster, path, {"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}}}, merge)
    assert status == 200, message

"""The resubmitter's annotations are its own (constructs/training_control.py ``_guard``): the real
API server, enforcing dist/'s ValidatingAdmissionPolicy, refuses a tenant who may patch TFJobs
when it forges the disruption evidence or resets the count, on create or on update, and lets the
resubmitter's ServiceAccount, git's plain TFJobs and the tenant's own cap through."""
from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request

import pytest

from colocate import ROOT
from colocate.base import safe_yaml
from colocate.model.names import DISRUPTION_ANNOTATION, MAX_RESUBMISSIONS_ANNOTATION, RESUBMISSIONS_ANNOTATION
from colocate.simulate import components, toolchain
from colocate.simulate.local_cluster import ControlPlane

DIST = ROOT / "dist"
GUARD = "colocate-resubmitter-annotations"
TFJOBS = "/apis/kubeflow.org/v1/namespaces/training/tfjobs"
_TLS = ssl.create_default_context()
_TLS.check_hostname = False
_TLS.verify_mode = ssl.CERT_NONE


def _docs(pattern: str) -> list[dict]:
    return [d for path in sorted(DIST.glob(pattern)) for d in safe_yaml.load_all(path.read_text()) if d]


def _token(cp: ControlPlane, namespace: str, name: str) -> str:
    return cp.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                      {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                       "spec": {"expirationSeconds": 3600}})["status"]["token"]


def _as(cp: ControlPlane, token: str, method: str, path: str, body: dict) -> tuple[int, str]:
    patch = method == "PATCH"
    request = urllib.request.Request(f"{cp.server}{path}", data=json.dumps(body).encode(), method=method, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json",
        "Content-Type": "application/merge-patch+json" if patch else "application/json"})
    try:
        with urllib.request.urlopen(request, context=_TLS, timeout=30) as answer:
            return answer.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}").get("message", "")


def _job(name: str, annotations: dict | None = None) -> dict:
    (job,) = _docs("apps/training/tfjob.training.tf-ps-mode.yaml")
    job["metadata"] = {**job["metadata"], "name": name, "annotations": {**(annotations or {})}}
    return job


@pytest.fixture(scope="module")
def cluster():
    binaries = toolchain.ensure(log=lambda line: None)
    with ControlPlane(binaries) as cp:
        components.install_crds(cp, _docs("apps/training-operator-upstream/customresourcedefinition.tfjobs.kubeflow.org.yaml"))
        for doc in [*_docs("apps/*/namespace.*.yaml"), *_docs("apps/training-control/serviceaccount.*.yaml"),
                    *_docs("apps/training-control/role*.colocate-resubmitter.yaml"),
                    *_docs(f"apps/training-control/validatingadmissionpolicy*.{GUARD}.yaml")]:
            cp.apply(doc)
        # A tenant who may do everything to TFJobs in training, as an ML team's Role would.
        cp.apply({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant", "namespace": "training"}})
        cp.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                  "metadata": {"name": "tenant", "namespace": "training"},
                  "rules": [{"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["*"]}]})
        cp.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                  "metadata": {"name": "tenant", "namespace": "training"},
                  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"},
                  "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": "training"}]})
        tenant, resubmitter = _token(cp, "training", "tenant"), _token(cp, "colocate-system", "colocate-resubmitter")
        forged = _job("forged", {DISRUPTION_ANNOTATION: '{"reason": "PreemptionByScheduler"}'})
        deadline = time.monotonic() + 60
        while _as(cp, tenant, "POST", f"{TFJOBS}?dryRun=All", forged)[0] < 400 and time.monotonic() < deadline:
            time.sleep(1)  # until the policy is compiled and enforced
        yield cp, tenant, resubmitter


def test_a_tenant_cannot_create_a_job_with_forged_evidence_or_a_count(cluster):
    cp, tenant, _ = cluster
    for key, value in ((DISRUPTION_ANNOTATION, '{"reason": "PreemptionByScheduler"}'), (RESUBMISSIONS_ANNOTATION, "0")):
        status, message = _as(cp, tenant, "POST", TFJOBS, _job(f"forged-{len(value)}", {key: value}))
        assert status in (403, 422) and GUARD in message and "are the resubmitter's" in message, (status, message)


def test_a_tenant_cannot_forge_evidence_or_reset_the_count_but_may_lower_its_cap(cluster):
    cp, tenant, resubmitter = cluster
    assert _as(cp, tenant, "POST", TFJOBS, _job("mine"))[0] == 201  # git's plain TFJob, as Argo CD creates it
    # The resubmitter records a count and evidence: allowed.
    marks = {RESUBMISSIONS_ANNOTATION: "3", DISRUPTION_ANNOTATION: '{"reason": "DeletionByTaintManager"}'}
    assert _as(cp, resubmitter, "PATCH", f"{TFJOBS}/mine", {"metadata": {"annotations": marks}}) == (200, "")
    for change in ({DISRUPTION_ANNOTATION: '{"reason": "EvictionByEvictionAPI"}'}, {DISRUPTION_ANNOTATION: None},
                   {RESUBMISSIONS_ANNOTATION: "0"}, {RESUBMISSIONS_ANNOTATION: None}):
        status, message = _as(cp, tenant, "PATCH", f"{TFJOBS}/mine", {"metadata": {"annotations": change}})
        assert status in (403, 422) and GUARD in message, (change, status, message)
    assert _as(cp, tenant, "PATCH", f"{TFJOBS}/mine", {"metadata": {"annotations": {
        MAX_RESUBMISSIONS_ANNOTATION: "1", "team": "ranking"}}}) == (200, "")
    live = cp.request("GET", f"{TFJOBS}/mine")["metadata"]["annotations"]
    assert live[RESUBMISSIONS_ANNOTATION] == "3" and live[MAX_RESUBMISSIONS_ANNOTATION] == "1", live


def test_the_guard_type_checks_against_the_tfjob_schema_without_a_warning(cluster):
    cp, _, _ = cluster
    deadline = time.monotonic() + 60
    while True:
        policy = cp.request("GET", f"/apis/admissionregistration.k8s.io/v1beta1/validatingadmissionpolicies/{GUARD}")
        if "typeChecking" in (policy.get("status") or {}) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert "typeChecking" in policy["status"], policy.get("status")
    assert not policy["status"]["typeChecking"].get("expressionWarnings"), policy["status"]

"""What Argo CD and the scheduler do to what colocate protects, with the real components (one
simulation): an add-on without a PriorityClass keeps its pods through a night of training
(offline-batch is preemptionPolicy: Never); deleting a job file prunes its TFJob, keeps its claim
and leaves the Application Synced, starting no sync once the TFJob is gone (IgnoreExtraneous); the claim of a job whose
IgnoreExtraneous was removed holds the Application OutOfSync while self-heal re-syncs it again
and again, which is the loop the annotation prevents; and a deleted TFJob is re-created by
Argo CD, which is how an edited job file is applied (docs/gitops.md, docs/tiers.md,
docs/training.md)."""
from __future__ import annotations

import shutil
import time

import pytest
import yaml

from colocate import ROOT
from colocate.simulate import run, scenario, toolchain


DIST = ROOT / "dist"
COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
ADDON = "Deployment/kube-system/addon"
#: A mixed node has 31.5 CPU allocatable; one add-on pod of 26 per node leaves too little for a
#: recsys-train Worker (6 CPU), so training needs the add-on's room at night.
ADDON_CPU, ADDON_REPLICAS = "26", 6
STEPS = {
    "offlineMayWait": True,
    "steps": [
        # By day training is paused, and the add-on (say a log indexer without a class) starts on the
        # mixed pool: the only untainted pool. Its replicas are 0 in git (the online Application
        # ignores replicas), so only this step scales it.
        {"name": "day", "offline": "pause", "scale": {ADDON: ADDON_REPLICAS}},
        {"name": "night", "offline": "resume"},
        {"name": "protected-job-removed", "removeJob": "tf-ps-mode"},
        {"name": "unprotected-job-removed", "removeJob": "recsys-train"},
    ],
}


@pytest.fixture(scope="module")
def protection(tmp_path_factory):
    toolchain.ensure(log=lambda line: None)
    root = tmp_path_factory.mktemp("protection")
    dist = root / "dist"
    shutil.copytree(DIST, dist)
    # The add-on: priority 0 (no class, no globalDefault tier), requests only.
    (dist / "apps/online/deployment.kube-system.addon.yaml").write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "addon", "namespace": "kube-system"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "addon"}},
                 "template": {"metadata": {"labels": {"app": "addon"}}, "spec": {"containers": [{
                     "name": "addon", "image": "harbor.example.com/platform/addon:1.0.0",
                     "resources": {"requests": {"cpu": ADDON_CPU, "memory": "1Gi"},
                                   "limits": {"cpu": ADDON_CPU, "memory": "1Gi"}}}]}}}}))
    # recsys-train's claim loses IgnoreExtraneous (what a hand-written claim without it does).
    claim = dist / "apps/training/persistentvolumeclaim.training.recsys-train-checkpoints.yaml"
    doc = yaml.safe_load(claim.read_text())
    assert doc["metadata"]["annotations"].pop(COMPARE_OPTIONS) == "IgnoreExtraneous"  # the reference sets it
    claim.write_text(yaml.safe_dump(doc))
    file = root / "protection.yaml"
    file.write_text(yaml.safe_dump(STEPS))
    seen = {}

    def inspect(cp):
        seen["addon"] = cp.items("/api/v1/namespaces/kube-system/pods?labelSelector=app%3Daddon")
        seen["events"] = cp.items("/api/v1/events")
        seen["claims"] = {c["metadata"]["name"] for c in cp.items("/api/v1/namespaces/training/persistentvolumeclaims")}
        seen["tfjobs"] = {j["metadata"]["name"] for j in cp.items("/apis/kubeflow.org/v1/namespaces/training/tfjobs")}
        seen["classes"] = {c["metadata"]["name"]: c.get("preemptionPolicy")
                           for c in cp.items("/apis/scheduling.k8s.io/v1/priorityclasses")}
        # How an edited job file is applied (docs/training.md, "Editing a job file"): delete the
        # TFJob; Argo CD (selfHeal) re-creates it from git, a new object under the same name.
        path = "/apis/kubeflow.org/v1/namespaces/training/tfjobs/tf-mnist-dist"
        seen["old_uid"] = cp.request("GET", path)["metadata"]["uid"]
        cp.request("DELETE", path)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            jobs = {j["metadata"]["name"]: j for j in cp.items("/apis/kubeflow.org/v1/namespaces/training/tfjobs")}
            job = jobs.get("tf-mnist-dist")
            if job and job["metadata"]["uid"] != seen["old_uid"] and not job["metadata"].get("deletionTimestamp"):
                seen["recreated"] = job
                break
            time.sleep(0.5)

    obs, _ = run.simulate(dist, scenario.load(str(file)), log=lambda line: None, inspect=inspect)
    return obs, seen


def test_an_addon_without_a_class_survives_a_night_of_training(protection):
    obs, seen = protection
    day, night, *_ = obs.steps
    assert seen["classes"]["offline-batch"] == "Never"
    # The add-on took the room by day; at night training wanted it and waited instead of preempting.
    assert night.training_pending > 0, night
    assert night.preemptions == 0, night
    addon = seen["addon"]
    assert len(addon) == ADDON_REPLICAS and all(p["spec"].get("nodeName") for p in addon), addon
    assert all(p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp") for p in addon)
    assert not [e for e in seen["events"] if e.get("reason") == "Preempted"
                and e["involvedObject"].get("namespace") == "kube-system"], "no add-on pod was ever preempted"
    # The training that fits runs: tf-mnist-dist's 2-CPU replicas find room beside the add-on.
    assert night.training_running > 0, night


def test_deleting_a_job_file_prunes_its_tfjob_keeps_its_claim_and_leaves_the_application_synced(protection):
    obs, seen = protection
    removed = obs.steps[2]
    app = "colocate-training"
    # Once the TFJob is gone (foreground deletion: its pods first), nothing holds the Application
    # OutOfSync: the kept claim carries IgnoreExtraneous. No sync in two resync periods.
    assert removed.argocd_syncs_after_prune == {app: 0}, removed.actions
    assert removed.argocd_sync_status[app] == "Synced", removed.argocd_sync_status
    assert "tf-ps-mode" not in seen["tfjobs"] and "tf-ps-mode-checkpoints" in seen["claims"], seen


def test_a_kept_claim_without_ignore_extraneous_starts_a_self_heal_loop(protection):
    obs, seen = protection
    before, after = obs.steps[2], obs.steps[3]
    app = "colocate-training"
    # Prune=false keeps the claim, so Argo CD sees it as extraneous for ever: OutOfSync, and a new
    # sync at every self-heal timeout (1 s here, 5 s by default), each one skipping the prune.
    assert after.argocd_sync_status[app] == "OutOfSync", after.argocd_sync_status
    assert after.argocd_syncs_after_prune[app] >= 3, after.actions
    assert "recsys-train" not in seen["tfjobs"] and "recsys-train-checkpoints" in seen["claims"], seen
    # The other Applications are not affected.
    assert after.argocd_syncs["colocate-platform"] == before.argocd_syncs["colocate-platform"]


def test_a_deleted_tfjob_is_re_created_by_argo_cd_which_is_how_an_edited_job_file_is_applied(protection):
    obs, seen = protection
    job = seen.get("recreated")
    assert job is not None, "Argo CD did not re-create tf-mnist-dist within 90 s"
    assert job["metadata"]["uid"] != seen["old_uid"]
    assert job["metadata"]["labels"].get("app.kubernetes.io/instance") == "colocate-training"
    volumes = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["volumes"]
    assert {v["persistentVolumeClaim"]["claimName"] for v in volumes} == {"tf-mnist-dist-checkpoints"}

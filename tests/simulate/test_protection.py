"""What Argo CD and the scheduler do to what colocate protects, with the real components (one
simulation): an add-on without a PriorityClass keeps its pods through a night of training
(offline-batch is preemptionPolicy: Never); deleting a job file prunes its TFJob, keeps its claim
and leaves the Application Synced, starting no sync once the TFJob is gone (IgnoreExtraneous); the claim of a job whose
IgnoreExtraneous was removed holds the Application OutOfSync while self-heal re-syncs it again
and again, which is the loop the annotation prevents; and a deleted TFJob is re-created by
Argo CD, which is how an edited job file is applied (docs/gitops.md, docs/tiers.md,
docs/training.md). The same cluster also shows the platform Applications' real chart objects
placed on their pools above the training priority, the report's stand-ins limited to what cannot
run offline, and that the repo server generates exactly dist/'s kube-prometheus-stack objects."""
from __future__ import annotations

import shutil
import time

import pytest
import yaml

from colocate import ROOT
from colocate.simulate import argocd, run, scenario, toolchain
from tests.helpers import yaml_load, yaml_load_all


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
    doc = yaml_load(claim.read_text())
    assert doc["metadata"]["annotations"].pop(COMPARE_OPTIONS) == "IgnoreExtraneous"  # the reference sets it
    claim.write_text(yaml.safe_dump(doc))
    file = root / "protection.yaml"
    file.write_text(yaml.safe_dump(STEPS))
    seen = {}

    def inspect(cp):
        seen["platform"] = _platform_pods(cp)
        seen["nodes"] = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in cp.items("/api/v1/nodes")}
        seen["priorities"] = {c["metadata"]["name"]: c["value"]
                              for c in cp.items("/apis/scheduling.k8s.io/v1/priorityclasses")}
        seen["kps_manifests"] = argocd.generated_manifests(cp, "kube-prometheus-stack")
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


#: The Applications whose objects are rendered from vendored charts and the operator overlay.
PLATFORM = ("kube-prometheus-stack", "dcgm-exporter", "nvidia-device-plugin", "colocate-training-operator-upstream")
POOL_LABEL = "colocate.io/pool"
_WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet", "Job", "Prometheus", "Alertmanager")


def _platform_pods(cp) -> dict[str, list[dict]]:
    """Per platform Application, the live pods of the workloads Argo CD lists as its resources
    (a Deployment's through its ReplicaSets; a Prometheus' and an Alertmanager's through the
    StatefulSet the operator stand-in made, which they own)."""
    owner = {}
    for kind, path in (("ReplicaSet", "/apis/apps/v1/replicasets"), ("StatefulSet", "/apis/apps/v1/statefulsets"),
                       ("Job", "/apis/batch/v1/jobs")):
        for obj in cp.items(path):
            refs = obj["metadata"].get("ownerReferences") or []
            owner[(kind, obj["metadata"]["namespace"], obj["metadata"]["name"])] = \
                (refs[0]["kind"], obj["metadata"]["namespace"], refs[0]["name"]) if refs else None
    out = {}
    for app in PLATFORM:
        status = cp.request("GET", cp.path("argoproj.io/v1alpha1", "Application", "argocd", app)).get("status") or {}
        mine = {(r["kind"], r.get("namespace"), r["name"]) for r in status.get("resources") or [] if r["kind"] in _WORKLOADS}
        out[app] = []
        for pod in cp.items("/api/v1/pods"):
            refs = pod["metadata"].get("ownerReferences") or []
            node = (refs[0]["kind"], pod["metadata"]["namespace"], refs[0]["name"]) if refs else None
            while node is not None and node not in mine:
                node = owner.get(node)
            if node is not None:
                out[app].append(pod)
    return out


def test_every_platform_pod_is_on_its_pool_above_the_training_priority(protection):
    """The charts' own pods (not stand-ins of our values): each one of kube-prometheus-stack,
    dcgm-exporter, nvidia-device-plugin and the training-operator overlay is bound to a node of the
    pool its nodeSelector names (every one but a DaemonSet's names one), with a priority the API
    server resolved above offline-batch's, so training never preempts it."""
    _, seen = protection
    floor = seen["priorities"]["offline-batch"]
    unpooled = set()
    for app in PLATFORM:
        pods = seen["platform"][app]
        assert pods, f"{app}: no pod"
        for pod in pods:
            name = f"{app}: {pod['metadata']['namespace']}/{pod['metadata']['name']}"
            node = pod["spec"].get("nodeName")
            assert node and pod["status"].get("phase") in ("Running", "Succeeded"), (name, node, pod["status"])
            wanted = (pod["spec"].get("nodeSelector") or {}).get(POOL_LABEL)
            daemon = (pod["metadata"].get("ownerReferences") or [{}])[0].get("kind") == "DaemonSet"
            if not (wanted or daemon):
                unpooled.add((pod["metadata"].get("generateName") or pod["metadata"]["name"]).rsplit("-", 2)[0])
            if wanted:
                assert seen["nodes"][node].get(POOL_LABEL) == wanted, (name, node, wanted)
            assert pod["spec"].get("priority", 0) > floor, (name, pod["spec"].get("priorityClassName"),
                                                            pod["spec"].get("priority"), floor)
    # Every pod but a DaemonSet's names its pool; the training-operator's too, through the overlay's
    # patch (charts/training_operator.py).
    assert unpooled == set(), unpooled
    # The chart's workloads, not stand-ins: its own Deployments, its node-exporter DaemonSet, and
    # the operator's Prometheus and Alertmanager through the operator stand-in.
    kps = {p["metadata"]["name"].rsplit("-", 2)[0] for p in seen["platform"]["kube-prometheus-stack"]}
    assert {"kube-prometheus-stack-grafana", "kube-prometheus-stack-operator",
            "kube-prometheus-stack-kube-state-metrics"} <= kps, kps
    names = {p["metadata"]["name"] for p in seen["platform"]["kube-prometheus-stack"]}
    assert {"prometheus-kube-prometheus-stack-prometheus-0", "alertmanager-kube-prometheus-stack-alertmanager-0"} <= names


def test_the_report_stands_in_only_for_what_cannot_run_offline(protection):
    obs, _ = protection
    stand_ins = obs.stand_ins
    assert not [k for k, v in stand_ins.items() if "Helm chart" in v or "not rendered offline" in v], stand_ins
    assert {"containers", "storage"} <= set(stand_ins), stand_ins
    webhooks = {k: v for k, v in stand_ins.items() if "WebhookConfiguration/" in k}
    assert webhooks and all("failurePolicy Ignore: the API server admits the requests it matches unchecked" in v
                            for v in webhooks.values()), webhooks
    operated = {k for k in stand_ins if k.startswith("StatefulSet/")}
    assert operated == {"StatefulSet/monitoring/prometheus-kube-prometheus-stack-prometheus",
                        "StatefulSet/monitoring/alertmanager-kube-prometheus-stack-alertmanager"}, stand_ins
    # Kueue (the reference admits training through it): its manager runs on the host.
    assert "host process" in stand_ins["Kueue"], stand_ins
    assert set(stand_ins) == {"containers", "storage", "Kueue", *webhooks, *operated}, stand_ins
    # Every Application, the platform ones included, is synced from dist/ and healthy.
    for app in obs.applications:
        assert not app.offline and app.sync in ("Synced", "OutOfSync") and not app.failed, app
        assert app.health in ("Healthy", "Progressing"), app
    assert {a.name: a.sync for a in obs.applications if a.name in PLATFORM} == dict.fromkeys(PLATFORM, "Synced")
    assert {a.name: a.health for a in obs.applications if a.name in PLATFORM} == dict.fromkeys(PLATFORM, "Healthy")


def _key(obj: dict) -> tuple:
    meta = obj.get("metadata") or {}
    return obj["kind"], meta.get("namespace"), meta["name"]


def test_the_repo_server_generates_exactly_the_objects_check_judged(protection):
    """What Argo CD applies is what dist/ holds, object for object and field for field: the real
    repo server's GenerateManifest answer for kube-prometheus-stack (read from its cache) against
    the parsed files of dist/apps/kube-prometheus-stack/. The one difference is Argo CD's
    tracking label (app.kubernetes.io/instance: the Application's name), which the chart already
    sets to the release name, the same value."""
    _, seen = protection
    generated = {_key(o): o for o in seen["kps_manifests"]}
    ours = {}
    for file in sorted((DIST / "apps/kube-prometheus-stack").glob("*.yaml")):
        for doc in yaml_load_all(file.read_text()):
            if doc:
                ours[_key(doc)] = doc
    assert set(generated) == set(ours), (set(generated) ^ set(ours))
    relabelled = []
    for key, doc in ours.items():
        got = generated[key]
        label = (got["metadata"].get("labels") or {}).get("app.kubernetes.io/instance")
        if doc["kind"] != "CustomResourceDefinition":
            assert label == "kube-prometheus-stack", (key, label)
        if (doc["metadata"].get("labels") or {}).get("app.kubernetes.io/instance") != label:
            relabelled.append(key)
            got = {**got, "metadata": {**got["metadata"], "labels": {
                k: v for k, v in got["metadata"]["labels"].items() if k != "app.kubernetes.io/instance"}}}
            if not got["metadata"]["labels"] and "labels" not in doc["metadata"]:
                del got["metadata"]["labels"]
        assert got == doc, key
    assert len(ours) > 100 and len(relabelled) < len(ours) // 2, relabelled

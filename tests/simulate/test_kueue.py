"""Kueue as the admission queue of training, with the real components: Kueue's manager (the
release colocate.yaml pins) as a host process beside the real training-operator v1.7.0, its
webhooks reached by the real kube-apiserver at https://127.0.0.1 (docs/simulate.md, "Kueue").

A ClusterQueue with 2 GPUs admits two of three 1-GPU TFJobs; the third stays suspended with a
pending Workload. ``stopPolicy: HoldAndDrain`` suspends the running ones without failing them;
``None`` admits them again. waitForPodsReady (colocate.yaml's timeout, scaled) evicts a job none
of whose pods can be placed, and (training-operator v1.7.0 says Running once one worker runs)
not a job of which one worker runs."""
from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request

import pytest

from colocate import config
from colocate.model.names import JOB_NAME_LABEL
from colocate.simulate import components, kueue, toolchain
from colocate.simulate.local_cluster import ControlPlane, refusal
from colocate.simulate.nodes import KWOK_LABEL
from colocate.simulate.observe import tfjob_state
from tests.helpers import wait_for, yaml_load_all

pytestmark = pytest.mark.simulate

NS = "training"
GPU = "nvidia.com/gpu"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE = "/apis/kueue.x-k8s.io/v1beta1"
TFJOBS = f"/apis/kubeflow.org/v1/namespaces/{NS}/tfjobs"
WORKLOADS = f"{KUEUE}/namespaces/{NS}/workloads"
CFG = config.load()
#: colocate.yaml's podsReadyTimeoutSeconds as the simulation runs it.
TIMEOUT = kueue.pods_ready_timeout(CFG.kueue)

_TLS = ssl.create_default_context()
_TLS.check_hostname = False
_TLS.verify_mode = ssl.CERT_NONE


def _node(name: str, pool: str) -> dict:
    key, value = KWOK_LABEL
    resources = {"cpu": "16", "memory": "64Gi", GPU: "2", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "pool": pool, key: value}},
            "status": {"capacity": resources, "allocatable": resources}}


def _queues(name: str, gpus: int) -> list[dict]:
    flavor = f"{name}-flavor"
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": flavor}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": name},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{
             "coveredResources": ["cpu", "memory", GPU],
             "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "32"},
                                                        {"name": "memory", "nominalQuota": "128Gi"},
                                                        {"name": GPU, "nominalQuota": gpus}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": name, "namespace": NS},
         "spec": {"clusterQueue": name}},
    ]


def _tfjob(name: str, queue: str, pool: str, workers: int = 1, gpus: int = 1) -> dict:
    resources = {"cpu": "1", "memory": "1Gi", GPU: str(gpus)}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: queue}},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": workers, "restartPolicy": "OnFailure", "template": {
                "spec": {"nodeSelector": {"pool": pool}, "terminationGracePeriodSeconds": 1,
                         "containers": [{"name": "tensorflow", "image": "registry.k8s.io/pause:3.9",
                                         "resources": {"requests": resources, "limits": resources}}]}}}}}}


def _create(cp: ControlPlane, obj: dict, dry_run: bool = False) -> dict:
    meta = obj["metadata"]
    return cp.request("POST", cp.path(obj["apiVersion"], obj["kind"], meta.get("namespace")) +
                      ("?dryRun=All" if dry_run else ""), obj)


def _wait(what: str, done, timeout: float = 180.0, cp: ControlPlane | None = None):
    """wait_for with the jobs' and Workloads' state on timeout."""
    return wait_for(what, done, timeout, (lambda: _state(cp)) if cp else None)


def _state(cp: ControlPlane) -> str:
    lines = []
    for job in cp.items(TFJOBS):
        name = job["metadata"]["name"]
        conditions = [(c["type"], c["status"], c.get("reason")) for c in
                      ((_workload(cp, name) or {}).get("status") or {}).get("conditions") or []]
        lines.append(f"{name}: suspend={_suspended(job)} state={tfjob_state(job)} pods={_phases(cp, name)} "
                     f"workload={conditions}")
    return "\n".join(lines)


def _job(cp: ControlPlane, name: str) -> dict:
    return cp.request("GET", f"{TFJOBS}/{name}")


def _suspended(job: dict) -> bool:
    return bool(((job["spec"].get("runPolicy") or {}).get("suspend")))


def _pods(cp: ControlPlane, job: str) -> list[dict]:
    return cp.items(f"/api/v1/namespaces/{NS}/pods?labelSelector={JOB_NAME_LABEL}%3D{job}")


def _phases(cp: ControlPlane, job: str) -> list[str]:
    return sorted(p.get("status", {}).get("phase", "") for p in _pods(cp, job)
                  if not p["metadata"].get("deletionTimestamp"))


def _workload(cp: ControlPlane, job: str) -> dict | None:
    """The Workload Kueue made for TFJob ``job`` (owned by it)."""
    for wl in cp.items(WORKLOADS):
        if any(o.get("kind") == "TFJob" and o.get("name") == job for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def _condition(obj: dict | None, kind: str) -> dict:
    return next((c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def _admitted(cp: ControlPlane, job: str) -> bool:
    return _condition(_workload(cp, job), "Admitted").get("status") == "True"


def _running(cp: ControlPlane, job: str, workers: int = 1) -> bool:
    return not _suspended(_job(cp, job)) and _phases(cp, job) == ["Running"] * workers


def _counts(cp: ControlPlane, queue: str) -> tuple[int, int]:
    """(admitted, pending) Workloads, as the ClusterQueue's status counts them."""
    status = cp.request("GET", f"{KUEUE}/clusterqueues/{queue}").get("status") or {}
    return status.get("admittedWorkloads", 0), status.get("pendingWorkloads", 0)


def _patch_stop_policy(cp: ControlPlane, queue: str, policy: str) -> None:
    cp.request("PATCH", f"{KUEUE}/clusterqueues/{queue}", {"spec": {"stopPolicy": policy}},
               content_type="application/merge-patch+json")


def _samples(text: str, metric: str) -> dict[str, float]:
    """``{labels: value}`` of one metric in Prometheus exposition text."""
    out = {}
    for line in text.splitlines():
        if line.startswith(metric + "{") or line.startswith(metric + " "):
            labels, _, value = line.rpartition(" ")
            out[labels[len(metric):]] = float(value)
    return out


@pytest.fixture(scope="module")
def cluster():
    binaries = toolchain.ensure(log=lambda line: None)
    with ControlPlane(binaries) as cp:
        tfjob_crd = [d for d in yaml_load_all((components.CRDS / "kubeflow.org_tfjobs.yaml").read_text()) if d]
        # Until dist/ carries Kueue's CRDs, the release's own (server-side: workloads' is > 256 KiB).
        components.install_crds(cp, [*tfjob_crd, *kueue.crds()])
        components.start_kwok(cp)
        for node in [_node("main-0", "main"), _node("main-1", "main"), _node("spare-0", "spare")]:
            cp.request("POST", "/api/v1/nodes", node)
        cp.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        components.start_training_operator(cp)
        manager = kueue.Kueue(cp, CFG.kueue)
        manager.start()
        for obj in [*_queues("gpus", 2), *_queues("spare", 8)]:
            _create(cp, obj)
        _wait("the ClusterQueues to be active", lambda: all(
            _condition(cp.request("GET", f"{KUEUE}/clusterqueues/{q}"), "Active").get("status") == "True"
            for q in ("gpus", "spare")))
        yield cp, manager
        cp.check_alive()


def test_the_webhooks_answer_from_the_host_process(cluster):
    cp, manager = cluster
    hooks = {h["name"]: h["clientConfig"]["url"] for kind in ("mutating", "validating")
             for h in cp.request("GET", f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/"
                                        f"kueue-{kind}-webhook-configuration")["webhooks"]}
    assert hooks["mtfjob.kb.io"] == f"{manager.url}/mutate-kubeflow-org-v1-tfjob"
    assert "mpod.kb.io" not in hooks and "mjob.kb.io" not in hooks, hooks
    # Only Kueue's mutating webhook can have suspended a job nothing reconciles (a dry run).
    created = _create(cp, _tfjob("dry", "gpus", "main"), dry_run=True)
    assert created["spec"]["runPolicy"]["suspend"] is True, created["spec"]
    without_label = _tfjob("dry", "gpus", "main")
    del without_label["metadata"]["labels"]
    # Every TFJob is Kueue's (manageJobsWithoutQueueName): one without a queue is suspended too,
    # and never admitted, instead of starting outside the quota.
    assert _suspended(_create(cp, without_label, dry_run=True))
    # Its validating webhook refuses a queue name that is no object name.
    with pytest.raises(urllib.error.HTTPError) as refused:
        _create(cp, _tfjob("bad-queue", "Not_A_Name", "main"), dry_run=True)
    message = refusal(refused.value)
    assert 'admission webhook "vtfjob.kb.io" denied' in message and QUEUE_LABEL in message, message


def test_two_of_three_jobs_are_admitted_and_run_the_third_waits_suspended(cluster):
    cp, _ = cluster
    for name in ("job-a", "job-b", "job-c"):
        _create(cp, _tfjob(name, "gpus", "main"))
        time.sleep(1.1)  # distinct creation seconds: Kueue orders a queue by creation time
    _wait("job-a and job-b to run", lambda: _running(cp, "job-a") and _running(cp, "job-b"), cp=cp)
    _wait("the ClusterQueue to count job-c pending", lambda: _workload(cp, "job-c") and _counts(cp, "gpus") == (2, 1),
          cp=cp)
    time.sleep(3)  # nothing else is coming
    pending = _workload(cp, "job-c")
    assert [_admitted(cp, j) for j in ("job-a", "job-b", "job-c")] == [True, True, False]
    reserved = _condition(pending, "QuotaReserved")
    assert reserved.get("status") != "True", pending["status"]
    # Why, once Kueue's scheduler has tried it (once, on a loaded machine, job-c's Workload still had
    # no QuotaReserved condition after 180 s while the ClusterQueue counted it pending).
    assert not reserved or "insufficient unused quota for nvidia.com/gpu" in reserved["message"], pending["status"]
    assert _suspended(_job(cp, "job-c")) and _pods(cp, "job-c") == []
    assert tfjob_state(_job(cp, "job-c")) != "Failed"


def test_kueue_serves_its_queue_metrics(cluster):
    cp, _ = cluster
    assert cp.metrics["kueue"].startswith("http://127.0.0.1:")
    text = urllib.request.urlopen(cp.metrics["kueue"], timeout=10).read().decode()
    pending = _samples(text, "kueue_pending_workloads")
    admitted = _samples(text, "kueue_admitted_workloads_total")
    assert sum(v for k, v in pending.items() if 'cluster_queue="gpus"' in k) == 1, pending
    assert admitted.get('{cluster_queue="gpus"}') == 2, admitted
    # The toolchain's ldflags: the manager reports the release it was built from.
    lines = [json.loads(line) for line in (cp.logs / "kueue.log").read_text().splitlines() if line.startswith("{")]
    started = next(line for line in lines if line.get("msg") == "Initializing")
    assert started["gitVersion"] == CFG.kueue.version and len(started["gitCommit"]) == 40, started


def test_hold_and_drain_suspends_the_running_jobs_without_failing_them(cluster):
    cp, _ = cluster
    _patch_stop_policy(cp, "gpus", "HoldAndDrain")
    jobs = ("job-a", "job-b", "job-c")
    _wait("every job suspended with no pod", lambda: all(_suspended(_job(cp, j)) and not _pods(cp, j) for j in jobs),
          cp=cp)
    for name in ("job-a", "job-b"):
        job, wl = _job(cp, name), _workload(cp, name)
        assert tfjob_state(job) != "Failed", job["status"]
        assert _condition(job, "Suspended").get("status") == "True", job["status"]
        assert _condition(wl, "Evicted").get("reason") == "ClusterQueueStopped", wl["status"]
    _wait("the quota to be released", lambda: not any(_admitted(cp, j) for j in jobs), cp=cp)
    text = urllib.request.urlopen(cp.metrics["kueue"], timeout=10).read().decode()
    evicted = _samples(text, "kueue_evicted_workloads_total")
    assert evicted.get('{cluster_queue="gpus",reason="ClusterQueueStopped"}') == 2, evicted


def test_stop_policy_none_admits_them_again(cluster):
    cp, _ = cluster
    jobs = ("job-a", "job-b", "job-c")
    _patch_stop_policy(cp, "gpus", "None")

    def two_running() -> set[str] | None:
        found = {j for j in jobs if _running(cp, j)}
        return found if len(found) == 2 else None
    running = _wait("two jobs to run again", two_running, cp=cp)
    time.sleep(3)
    # Two of the three, not necessarily the two it drained: job-c, pending all along, is requeued as
    # soon as the queue is active, the drained ones once Kueue marks them Requeued
    # (ClusterQueueRestarted); either may be first.
    (waiting,) = set(jobs) - running
    assert {j for j in jobs if _admitted(cp, j)} == running
    assert _suspended(_job(cp, waiting)) and _pods(cp, waiting) == []
    assert _condition(_workload(cp, waiting), "QuotaReserved").get("status") == "False"
    assert all(tfjob_state(_job(cp, j)) in ("Running", "Suspended") for j in jobs)
    if waiting != "job-c":  # a drained job waits: it is admitted when job-c gives the quota back
        cp.request("DELETE", f"{TFJOBS}/job-c")
        _wait(f"{waiting} to run again", lambda: _running(cp, waiting), cp=cp)
    for name in ("job-a", "job-b"):
        # The operator writes the Running condition after the pods run: wait for it, not a race.
        _wait(f"{name} to be Running", lambda name=name: tfjob_state(_job(cp, name)) == "Running", cp=cp)
        job = _job(cp, name)
        assert _running(cp, name) and tfjob_state(job) == "Running", job["status"]
        assert _condition(job, "Suspended").get("reason") == "TFJobResumed", job["status"]


def test_wait_for_pods_ready_evicts_a_job_none_of_whose_pods_runs_but_not_one_with_a_worker_running(cluster):
    cp, _ = cluster
    # One 2-GPU worker fits the spare node, the second stays Pending.
    _create(cp, _tfjob("half-placed", "spare", "spare", workers=2, gpus=2))
    _wait("half-placed to be admitted with one worker running",
          lambda: _admitted(cp, "half-placed") and _phases(cp, "half-placed") == ["Pending", "Running"], cp=cp)
    # No node has 4 GPUs: the scheduler places nothing, Kueue admitted it (quota 8).
    _create(cp, _tfjob("placed-nowhere", "spare", "spare", gpus=4))
    _wait("placed-nowhere to be admitted", lambda: _admitted(cp, "placed-nowhere"), cp=cp)
    admitted_at = time.monotonic()
    # Evicted (reason PodsReadyTimeout) lasts until the requeue backoff readmits it; the requeue
    # count stays.
    evicted = _wait("placed-nowhere to be evicted", lambda: _timed_out(_workload(cp, "placed-nowhere"))
                    and time.monotonic(), timeout=TIMEOUT + 90, cp=cp)
    # The timeout is colocate.yaml's, scaled (600 s -> 20 s), not Kueue's default 5 min; Kueue counts
    # from admission (both moments as this test saw them, a poll or two late on a busy machine).
    assert TIMEOUT - 5 <= evicted - admitted_at <= TIMEOUT + 45, (evicted - admitted_at, TIMEOUT)
    stopped = _wait("Kueue to stop placed-nowhere", lambda: [
        e["message"] for e in cp.items(f"/api/v1/namespaces/{NS}/events")
        if e["involvedObject"].get("name") == "placed-nowhere" and e.get("reason") == "Stopped"])
    assert any("Exceeded the PodsReady timeout" in m for m in stopped), stopped
    assert tfjob_state(_job(cp, "placed-nowhere")) != "Failed"
    # training-operator v1.7.0 sets the TFJob's Running condition once one worker runs, and that is
    # what Kueue reads as the pods being ready: half-placed keeps its quota and its pending worker.
    wl = _workload(cp, "half-placed")
    assert _condition(wl, "PodsReady").get("status") == "True", wl["status"]
    assert _admitted(cp, "half-placed") and not _timed_out(wl), wl["status"]
    assert _phases(cp, "half-placed") == ["Pending", "Running"]
    text = urllib.request.urlopen(cp.metrics["kueue"], timeout=10).read().decode()
    assert _samples(text, "kueue_evicted_workloads_total").get(
        '{cluster_queue="spare",reason="PodsReadyTimeout"}', 0) >= 1


def _timed_out(wl: dict | None) -> bool:
    return (_condition(wl, "Evicted").get("reason") == "PodsReadyTimeout"
            or (((wl or {}).get("status") or {}).get("requeueState") or {}).get("count", 0) >= 1)


# --- colocate simulate with Kueue in dist/: what the generator will write, added to a copy ---------

def _requests(job: dict) -> dict[str, int]:
    """Whole units of each resource a TFJob's replicas request (cpu in millicores, memory in bytes); a
    limit without a request is the request (the API server's defaulting, which Kueue counts too)."""
    from colocate.model import quantity

    out: dict[str, int] = {}
    for spec in job["spec"]["tfReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            resources = container.get("resources") or {}
            for name, value in {**(resources.get("limits") or {}), **(resources.get("requests") or {})}.items():
                out[name] = out.get(name, 0) + int(quantity.parse(value) * (1000 if name == "cpu" else 1)) * spec["replicas"]
    return out


@pytest.fixture(scope="module")
def synced():
    """A night of the reference dist/ as it is: Kueue, its webhooks and the training queue are
    in it (kueue.admitTraining), every TFJob carries the queue's label."""
    from colocate import ROOT
    from colocate.simulate import run, scenario

    dist = ROOT / "dist"
    seen: dict = {}

    def inspect(cp: ControlPlane) -> None:
        seen["jobs"] = {j["metadata"]["name"]: j for j in cp.items(TFJOBS)}
        seen["workloads"] = {j: _workload(cp, j) for j in seen["jobs"]}
        seen["hooks"] = {h["name"]: h["clientConfig"] for kind in ("mutating", "validating") for h in cp.request(
            "GET", f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/kueue-{kind}-webhook-configuration")[
            "webhooks"]}
        seen["metrics"] = cp.scrape("kueue")
        seen["url"] = next(c["url"] for c in seen["hooks"].values()).split("/mutate")[0].split("/validate")[0]

    # From nothing, never a kept base: what is tested is the first sync, Kueue starting during it
    # and admitting every job (its admission counter is this process's).
    obs, _ = run.simulate(dist, scenario.load("night"), log=lambda line: None, inspect=inspect)
    return obs, seen


def test_simulate_runs_kueue_once_argo_cd_installed_its_crds_and_every_reference_job_is_admitted(synced):
    obs, seen = synced
    assert obs.ok and not obs.rejected, (obs.rejected, obs.failed_creates, obs.notes)
    assert not [n for n in obs.notes if "Kueue" in n], obs.notes
    assert set(seen["jobs"]) == {"recsys-train", "tf-mnist-dist", "tf-ps-mode"}
    for name, job in seen["jobs"].items():
        assert _condition(seen["workloads"][name], "Admitted").get("status") == "True", seen["workloads"][name]
        assert tfjob_state(job) == "Running" and not _suspended(job), job["status"]
    assert _samples(seen["metrics"], "kueue_admitted_workloads_total") == {'{cluster_queue="training"}': 3}
    # Admitted while Argo CD synced, their pods ready within the timeout: the training-operator runs
    # as soon as Kueue does, not after the sync.
    evicted = _samples(seen["metrics"], "kueue_evicted_workloads_total")
    assert not any(evicted.values()), evicted


def test_dist_webhook_configurations_call_the_host_process_by_url(synced):
    obs, seen = synced
    url = seen["url"]
    assert url.startswith("https://127.0.0.1:")
    assert all(c["url"].startswith(url + "/") and c["caBundle"] and "service" not in c for c in seen["hooks"].values())
    assert "mtfjob.kb.io" in seen["hooks"]
    assert "WebhookConfiguration/kueue-validating-webhook-configuration" in obs.stand_ins["Kueue"], obs.stand_ins
    assert not [k for k in obs.stand_ins if "kueue-" in k and k != "Kueue"], obs.stand_ins

"""colocate simulate with the real components: the reference dist/ places every pod at night and
at peak, each fault class is reported with the real component's own message, and no process a
simulation started survives it."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from colocate import ROOT, checker
from colocate.rules import admission
from colocate.simulate import local_cluster as control_plane, toolchain
from colocate.base.go_builds import environment
from colocate.model.names import QUEUE_NAME_LABEL
from tests.helpers import colocate, VENV_BIN, yaml_load

DIST = ROOT / "dist"


@pytest.fixture(scope="module", autouse=True)
def components():
    """Build the pinned components (make test builds them first; a no-op then). Go missing is a
    failure that says how to install it, never a skip."""
    toolchain.ensure(log=lambda line: None)


#: Every process a simulation of this test run starts inherits it, so survivors() counts only
#: ours (a developer may run other simulations meanwhile).
TAG = {"COLOCATE_TEST_RUN": f"{os.getpid()}-{time.time()}"}


def simulate(*args: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = colocate("simulate", *args, "--format", "json", env=TAG)
    assert proc.returncode in (0, 1), proc.stderr
    return proc, json.loads(proc.stdout)


@contextlib.contextmanager
def tagged():
    """Around an in-process run.simulate: the processes it starts carry TAG too, for survivors()."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in TAG.items():
            patch.setenv(name, value)
        yield


def survivors() -> list[str]:
    """Processes a simulation of this test run started that are still alive."""
    marker = "=".join(next(iter(TAG.items()))).encode()
    out = []
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:120]
            out.append(f"{proc.name}: {command!r}")
    return out


@pytest.fixture(scope="module")
def night():
    return simulate(str(DIST))


@pytest.fixture(scope="module")
def peak(tmp_path_factory):
    """The peak's JSON report, and its text report from the same run (``--write``)."""
    text = tmp_path_factory.mktemp("peak") / "peak.txt"
    proc, report = simulate(str(DIST), "--scenario", "peak", "--write", f"text:{text}")
    return proc, report, text.read_text()


def test_reference_night_places_every_pod(night):
    proc, report = night
    assert proc.returncode == 0, proc.stdout
    assert report["ok"] and report["rejected"] == [] and report["failed_creates"] == []
    # Argo CD synced every policy the reference generates, bound, before the pods below were made:
    # the training-operator's TFJob pods, the charts' pods and the operator stand-in's, the online Deployment's
    # were all admitted with every policy enforced (docs/admission.md).
    assert report["admission_policies"] == sorted(r.id for r in admission.enforced(checker.load_rules()))
    pods = report["pods"]
    assert pods and all(p["node"] for p in pods), [p for p in pods if not p["node"]]
    # Every reference TFJob made its pods and runs; every pool got its nodes.
    assert report["tfjobs"] and set(report["tfjobs"].values()) == {"Running"}, report["tfjobs"]
    training = [p for p in pods if p["owner"].startswith("TFJob/")]
    assert {p["owner"] for p in training} == {f"TFJob/{name.split('/')[1]}" for name in report["tfjobs"]}
    assert {n["pool"] for n in report["nodes"]} == {"online", "mixed", "monitoring"}
    # Online pods land on the online pool first (weight-100 preference).
    online = [p for p in pods if p["tier"] == "online"]
    assert online and all(p["node"].startswith("online-") for p in online), online


def test_peak_places_every_online_pod_and_lists_the_preempted_training_pods(peak):
    proc, report, text = peak
    assert proc.returncode == 0, proc.stdout
    online = [p for p in report["pods"] if p["tier"] == "online"]
    peak_replicas = int(yaml_load((DIST / "apps/online/deployment.online.recsys-inference.yaml").read_text())
                        ["metadata"]["annotations"]["colocate.io/peak-replicas"])
    assert len(online) == peak_replicas and all(p["node"] for p in online), online
    assert report["preemptions"], "peak must preempt training to place the online pods"
    for p in report["preemptions"]:
        assert p["victim"].startswith("training/") and p["preemptor"].startswith("online/recsys-inference-"), p
    # training-operator v1.7.0 fails each TFJob whose pod is preempted; colocate resubmitter
    # re-creates it (docs/resubmission.md): none is left Failed, and the report names each one.
    lost = set(report["disrupted_pods"])
    assert lost and report["failed_by_preemption"] == [] and report["failed_jobs"] == [], report
    assert set(report["resubmissions"]) == lost, (report["resubmissions"], lost)
    assert "Preempted:" in text and "Resubmitted (colocate resubmitter):" in text, text


def test_no_process_survives_a_simulation(night, peak):
    assert survivors() == []


def test_ctrl_c_stops_every_process(tmp_path):
    proc = subprocess.Popen([str(VENV_BIN / "colocate"), "simulate", str(DIST)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env={**environment(), **TAG})
    for line in proc.stderr:
        if "control plane up" in line:
            break
    assert survivors(), "the simulation's components should be running now"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert survivors() == []


def test_unusable_input_is_exit_2(tmp_path):
    proc = colocate("simulate", str(tmp_path))
    assert proc.returncode == 2 and "no node pool descriptions" in proc.stderr, proc.stderr
    proc = colocate("simulate", str(DIST), "--scenario", "noon")
    assert proc.returncode == 2 and "--scenario:noon: no such scenario; shipped: " in proc.stderr, proc.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("scale: {online/recsys-inference: 3}\n")
    proc = colocate("simulate", str(DIST), "--scenario", str(bad))
    assert proc.returncode == 2 and "is not a workload: write Deployment/<namespace>/<name>" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    # --write is checked before anything starts: tests/test_simulate_write.py.


# --- faults: one simulation of the reference dist/ with one object per fault class added, each
# made from a reference object, and a scenario that shrinks the pools and scales online up. ------

def _tfjob(name: str, **worker_resources) -> dict:
    """The reference tf-mnist-dist as a new job with one Worker of the given requests/limits."""
    job = yaml_load((DIST / "apps/training/tfjob.training.tf-mnist-dist.yaml").read_text())
    job["metadata"]["name"] = name
    specs = job["spec"]["tfReplicaSpecs"]
    for role in [r for r in specs if r != "Worker"]:
        del specs[role]
    worker = specs["Worker"]
    worker["replicas"] = 1
    container = worker["template"]["spec"]["containers"][0]
    container["resources"] = worker_resources
    if not any("nvidia.com/gpu" in (worker_resources.get(k) or {}) for k in ("requests", "limits")):
        # No GPU on a GPU pool: it hides the node's, or the admission policy COL070 refuses it first.
        container["env"] = [*(e for e in container.get("env") or [] if e.get("name") != "NVIDIA_VISIBLE_DEVICES"),
                            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    for volume in worker["template"]["spec"].get("volumes") or []:
        if "persistentVolumeClaim" in volume:  # the reference claim is tf-mnist-dist's
            volume["persistentVolumeClaim"]["claimName"] = "tf-mnist-dist-checkpoints"
    return job


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    dist = root / "dist"
    shutil.copytree(DIST, dist)
    gpu = "nvidia.com/gpu"
    added = {
        "tfjob.training.fits-no-node.yaml": _tfjob("fits-no-node", requests={"cpu": "2", "memory": "4Gi", gpu: "4"},
                                                   limits={"cpu": "2", "memory": "4Gi", gpu: "4"}),
        "tfjob.training.over-gpu-quota.yaml": _tfjob("over-gpu-quota", requests={"cpu": "2", "memory": "4Gi", gpu: "13"},
                                                     limits={"cpu": "2", "memory": "4Gi", gpu: "13"}),
        "tfjob.training.request-over-limit.yaml": _tfjob("request-over-limit", requests={"cpu": "1", "memory": "8Gi"},
                                                         limits={"cpu": "2", "memory": "4Gi"}),
        "tfjob.training.over-limitrange.yaml": _tfjob("over-limitrange", requests={"cpu": "1", "memory": "4Gi"},
                                                      limits={"cpu": "2", "memory": "200Gi"}),
    }
    # Applied by hand without a queue: Kueue manages every TFJob (manageJobsWithoutQueueName), so
    # it is suspended at creation and never starts outside the quota.
    unqueued = _tfjob("no-queue", requests={"cpu": "1", "memory": "4Gi"}, limits={"cpu": "1", "memory": "4Gi"})
    unqueued["metadata"]["labels"].pop(QUEUE_NAME_LABEL)
    added["tfjob.training.no-queue.yaml"] = unqueued
    privileged = yaml_load((DIST / "apps/online/deployment.online.recsys-inference.yaml").read_text())
    privileged["metadata"]["name"] = "debug-shell"
    privileged["metadata"]["namespace"] = "training"
    privileged["spec"]["selector"]["matchLabels"] = privileged["spec"]["template"]["metadata"]["labels"] = {
        "app.kubernetes.io/name": "debug-shell"}
    pod = privileged["spec"]["template"]["spec"]
    pod["priorityClassName"] = "offline-batch"
    # Without the online pool's toleration, which the admission policy COL005 refuses in training.
    pod.pop("tolerations")
    pod["containers"][0]["securityContext"] = {"privileged": True}
    pod["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    # No GPU: it hides the node's (COL070), so the fault it shows is Pod Security's.
    pod["containers"][0]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
    added["deployment.training.debug-shell.yaml"] = privileged
    # A training Deployment at the online priority: Argo CD cannot sync it past the policy.
    online = json.loads(json.dumps(privileged))
    online["metadata"]["name"] = "online-in-training"
    online["spec"]["selector"]["matchLabels"] = online["spec"]["template"]["metadata"]["labels"] = {
        "app.kubernetes.io/name": "online-in-training"}
    online["spec"]["template"]["spec"]["priorityClassName"] = "online-high"
    del online["spec"]["template"]["spec"]["containers"][0]["securityContext"]
    added["deployment.training.online-in-training.yaml"] = online
    # JAXJob: a kind of a newer training-operator (v1.9) than the pinned v1.7.0, whose overlay
    # (training-operator-upstream) installs the CRDs of TFJob, PyTorchJob, MPIJob, ... but not this.
    added["jaxjob.training.no-crd.yaml"] = {"apiVersion": "kubeflow.org/v1", "kind": "JAXJob",
                                            "metadata": {"name": "no-crd", "namespace": "training"},
                                            "spec": {"jaxReplicaSpecs": {}}}
    for name, doc in added.items():
        # A missing CRD fails the dry run of its whole Application, so it goes where nothing else is.
        folder = "observability" if doc["kind"] == "JAXJob" else "training"
        (dist / "apps" / folder / name).write_text(yaml.safe_dump(doc))
    scenario = root / "shrunk-peak.yaml"
    scenario.write_text("description: online grows to 12 while half the GPU nodes are down\n"
                        "nodes: {online: -4, mixed: -4}\n"
                        "scale: {Deployment/online/recsys-inference: 12}\n"
                        # One step, so the report carries Kueue's reason for each job it holds.
                        "steps: [{name: settled}]\n")
    return simulate(str(dist), "--scenario", str(scenario))


def _problems(report, needle: str) -> list[str]:
    return [f"{p['object']}: {p['message']}" for p in report["failed_creates"] if needle in p["object"]]


def test_fault_run_fails(faults):
    proc, report = faults
    assert proc.returncode == 1 and not report["ok"]


def test_fault_worker_that_fits_no_node_is_pending_with_the_schedulers_reason(faults):
    # Kueue admits it (its quota fits), the scheduler places it nowhere, and after waitForPodsReady's
    # timeout Kueue evicts and requeues it (kueue v0.10.6 workload_controller.go): the run ends in
    # one of the two, each with its reason, and the job never runs.
    _, report = faults
    pod = next((p for p in report["pods"] if p["name"] == "fits-no-node-worker-0"), None)
    if pod is not None:
        assert pod["node"] is None and "Insufficient nvidia.com/gpu" in pod["reason"], pod
    else:
        reason = report["steps"][-1]["waiting_reason"].get("training/fits-no-node", "")
        assert "Exceeded the PodsReady timeout training/" in reason, report["steps"][-1]
    assert report["tfjobs"]["training/fits-no-node"] != "Running", report["tfjobs"]


def test_fault_job_over_the_queue_s_gpu_quota_is_never_admitted_and_makes_no_pod(faults):
    # Kueue holds it (13 GPUs, the ClusterQueue 12): it waits suspended, and COL120 refuses it in check.
    _, report = faults
    assert report["tfjobs"]["training/over-gpu-quota"] == "Suspended", report["tfjobs"]
    assert not [p for p in report["pods"] if p["name"].startswith("over-gpu-quota-")], report["pods"]


def test_fault_job_without_a_queue_is_suspended_and_never_runs(faults):
    _, report = faults
    assert report["tfjobs"]["training/no-queue"] == "Suspended", report["tfjobs"]
    assert not [p for p in report["pods"] if p["name"].startswith("no-queue-")], report["pods"]


def _held(report, job: str) -> str:
    """Kueue's reason for holding ``job`` (the step's QuotaReserved message); the job has no pod."""
    assert report["tfjobs"][f"training/{job}"] == "Suspended", report["tfjobs"]
    assert not [p for p in report["pods"] if p["name"].startswith(f"{job}-")], report["pods"]
    return report["steps"][-1]["waiting_reason"].get(f"training/{job}", "")


def test_fault_request_above_its_limit_is_never_admitted(faults):
    # Kueue checks a workload's requests against its limits before admitting it, so the pod the
    # API server would refuse is never made (kubernetes-sigs/kueue v0.10.6 pkg/scheduler/scheduler.go
    # workload.ValidateResources).
    _, report = faults
    reason = _held(report, "request-over-limit")
    assert "requests must not exceed it's limits" in reason, reason


def test_fault_container_above_the_limitrange_maximum_is_never_admitted(faults):
    # ... and against the namespace's LimitRange (workload.ValidateLimitRange).
    _, report = faults
    reason = _held(report, "over-limitrange")
    assert "resources didn't satisfy LimitRange constraints" in reason, reason


def test_fault_privileged_pod_where_pod_security_forbids_it(faults):
    _, report = faults
    found = _problems(report, "ReplicaSet/training/debug-shell")
    assert any('violates PodSecurity "baseline:latest": privileged' in m for m in found), found


def test_fault_training_deployment_at_the_online_priority_is_denied_by_the_admission_policy(faults):
    _, report = faults
    found = [r for r in report["rejected"] if r["object"] == "Deployment/training/online-in-training"]
    assert found and "ValidatingAdmissionPolicy 'colocate-col004-offline-priority'" in found[0]["message"], found
    assert "COL004 offline-priority" in found[0]["message"], found


def test_fault_custom_resource_without_its_crd_is_rejected(faults):
    _, report = faults
    found = [r for r in report["rejected"] if r["object"] == "JAXJob/training/no-crd"]
    # Argo CD's own words, then the API server's discovery: no such kind is served. Argo CD words it
    # two ways depending on whether its cluster cache or the dry-run met the missing kind first
    # (argo-cd v2.10.15 util/argo/argo.go AugmentSyncMsg rewrites the API server's "could not find").
    argocd_words = ('JAXJob.kubeflow.org "" not found', "The Kubernetes API could not find kubeflow.org/JAXJob")
    assert found and found[0]["message"].startswith(argocd_words), report["rejected"]
    assert 'no matches for kind "JAXJob" in version "kubeflow.org/v1"' in found[0]["message"]
    assert found[0]["source"].endswith("jaxjob.training.no-crd.yaml")


def test_fault_online_service_that_cannot_be_placed_at_peak(faults):
    _, report = faults
    online = [p for p in report["pods"] if p["tier"] == "online" and p["node"] is None]
    assert online and all("Insufficient nvidia.com/gpu" in p["reason"] for p in online), online


def test_a_config_without_what_simulate_needs_is_named(tmp_path):
    """The --config file, not colocate.yaml, is the one named when its simulation or schedule
    section is missing."""
    text = (ROOT / "colocate.yaml").read_text()
    no_schedule = tmp_path / "no-schedule.yaml"
    no_schedule.write_text(text[:text.index("schedule:")] + text[text.index("storage:"):])
    proc = colocate("simulate", str(DIST), "--config", str(no_schedule), "--scenario", "day")
    assert proc.returncode == 2 and "no-schedule.yaml:$.schedule: missing" in proc.stderr, proc.stderr
    no_simulation = tmp_path / "no-simulation.yaml"
    no_simulation.write_text(text[:text.index("simulation:")] + text[text.index("\ncluster:") + 1:])
    proc = colocate("simulate", str(DIST), "--config", str(no_simulation))
    assert proc.returncode == 2 and "no-simulation.yaml:$.simulation: missing" in proc.stderr, proc.stderr


def test_free_ports_are_given_once_and_never_from_the_ephemeral_range():
    """Each component gets a port of its own, and none from the range the kernel gives outgoing
    connections: a client's connection once took kube-controller-manager's port between the
    answer and its bind, and the run failed with "address already in use"."""
    low, high = control_plane._ephemeral_range()
    ports = [control_plane.free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    assert not [p for p in ports if low <= p <= high]


@pytest.mark.parametrize("outside, seen", [({}, control_plane.GOGC), ({"GOGC": "100"}, "100")])
def test_components_collect_garbage_less_often_unless_the_environment_says_otherwise(monkeypatch, outside, seen):
    monkeypatch.delenv("GOGC", raising=False)
    for name, value in outside.items():
        monkeypatch.setenv(name, value)
    cp = control_plane.ControlPlane({})  # not entered: no component is started
    try:
        cp.run("env", ["sh", "-c", 'printf %s "$GOGC"']).wait(timeout=10)
        assert (cp.logs / "env.log").read_text() == seen
    finally:
        shutil.rmtree(cp.workdir)

"""``colocate offline resume`` with Kueue releases the held ClusterQueue only once the paused
training pods are gone (colocate/incluster/offline.py ``hold``): released earlier, Kueue readmits
the jobs at once and training-operator v1.7.0 counts a still-terminating pod as a failed replica.
The real API server, the ClusterQueue CRD from dist/, and a training pod kept terminating by a
finalizer, as a pod whose containers are still saving their checkpoint is."""
from __future__ import annotations

import subprocess
import time

import pytest

from colocate import ROOT
from colocate.base import safe_yaml
from colocate.incluster import offline
from colocate.model.names import JOB_NAME_LABEL
from colocate.simulate import components, toolchain
from colocate.simulate.local_cluster import ControlPlane
from tests.helpers import VENV_BIN, environment

DIST = ROOT / "dist"
QUEUE = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/training"
FINALIZER = "colocate.io/test-terminating"


def _docs(pattern: str) -> list[dict]:
    return [d for path in sorted(DIST.glob(pattern)) for d in safe_yaml.load_all(path.read_text()) if d]


@pytest.fixture(scope="module")
def cluster():
    binaries = toolchain.ensure(log=lambda line: None)
    with ControlPlane(binaries) as cp:
        components.install_crds(cp, _docs("apps/kueue-upstream/customresourcedefinition.clusterqueues.kueue.x-k8s.io.yaml"))
        cp.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "training"}})
        (queue,) = _docs("apps/kueue/clusterqueue.training.yaml")
        cp.apply(queue)
        yield cp


def _stop_policy(cp: ControlPlane) -> str:
    return (cp.request("GET", QUEUE).get("spec") or {}).get("stopPolicy", "None")


def test_resume_waits_for_the_paused_pods_then_releases_the_queue(cluster):
    cp = cluster
    run = [str(VENV_BIN / "colocate"), "offline"]
    where = ["--cluster-queue", "training", "--namespace", "training", "--kubeconfig", str(cp.kubeconfig)]
    assert subprocess.run([*run, "pause", *where], capture_output=True, text=True, env=environment()).returncode == 0
    assert _stop_policy(cp) == "HoldAndDrain"
    # A paused pod still terminating: deleted, kept by a finalizer until "its checkpoint is saved".
    cp.request("POST", "/api/v1/namespaces/training/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "job-worker-0", "labels": {JOB_NAME_LABEL: "job"}, "finalizers": [FINALIZER]},
        "spec": {"containers": [{"name": "tensorflow", "image": "harbor.example.com/ml/tf:2.11.0"}]}})
    cp.request("DELETE", "/api/v1/namespaces/training/pods/job-worker-0")
    resume = subprocess.Popen([*run, "resume", *where], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=environment())
    time.sleep(4)
    assert resume.poll() is None and _stop_policy(cp) == "HoldAndDrain", "released while a paused pod terminates"
    cp.request("PATCH", "/api/v1/namespaces/training/pods/job-worker-0", {"metadata": {"finalizers": None}},
               content_type="application/merge-patch+json")
    out, err = resume.communicate(timeout=60)
    assert resume.returncode == 0, err
    assert "waiting for the paused pods training/job-worker-0" in err and _stop_policy(cp) == "None", err


def test_resume_gives_up_holding_when_the_pods_stay(cluster):
    from colocate.incluster.kube import ClusterQueues, TFJobs, api_client

    cp = cluster
    api = api_client(str(cp.kubeconfig))
    offline.hold(ClusterQueues(api), "training", "pause")
    cp.request("POST", "/api/v1/namespaces/training/pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stuck-worker-0", "labels": {JOB_NAME_LABEL: "stuck"}, "finalizers": [FINALIZER]},
        "spec": {"containers": [{"name": "tensorflow", "image": "harbor.example.com/ml/tf:2.11.0"}]}})
    cp.request("DELETE", "/api/v1/namespaces/training/pods/stuck-worker-0")
    with pytest.raises(Exception, match="stuck-worker-0 are still terminating after 2 s; it stays held"):
        offline.hold(ClusterQueues(api), "training", "resume", jobs=TFJobs(api), namespaces=("training",),
                     wait_seconds=2)
    assert _stop_policy(cp) == "HoldAndDrain"
    cp.request("PATCH", "/api/v1/namespaces/training/pods/stuck-worker-0", {"metadata": {"finalizers": None}},
               content_type="application/merge-patch+json")

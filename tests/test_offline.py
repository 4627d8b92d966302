"""``colocate offline pause|resume``: which TFJobs it suspends and resumes, the patch it sends, and
its errors. Against a live training-operator in the simulated cluster."""
from __future__ import annotations

import contextlib
import copy
import http.server
import threading
import time

import pytest

from colocate import ROOT
from colocate.incluster import offline
from tests.helpers import colocate, json_server, kubeconfig_for, yaml_load

#: A reference TFJob as synthesized, given live state below.
TFJOB = yaml_load((ROOT / "dist/apps/training/tfjob.training.tf-mnist-dist.yaml").read_text())


def _job(name: str, *conditions: str, suspend: bool = False, paused_by: str | None = None) -> dict:
    job = copy.deepcopy(TFJOB)
    job["metadata"]["name"] = name
    if suspend:
        job["spec"]["runPolicy"]["suspend"] = True
    if paused_by:
        job["metadata"].setdefault("annotations", {})["colocate.io/paused-by"] = paused_by
    job["status"] = {"conditions": [{"type": c, "status": "True"} for c in conditions]}
    return job


JOBS = [
    _job("running", "Created", "Running"),
    _job("waiting", "Created"),
    _job("done", "Created", "Succeeded"),
    _job("failed", "Created", "Restarting", "Failed"),
    _job("held-by-hand", "Created", "Suspended", suspend=True),
    _job("paused-by-us", "Created", "Suspended", suspend=True, paused_by=offline.PAUSED_BY),
]


def test_pause_suspends_every_unfinished_job_not_already_suspended():
    assert [c.name for c in offline.plan(JOBS, "pause")] == ["running", "waiting"]


def test_resume_starts_only_what_pause_stopped():
    assert [c.name for c in offline.plan(JOBS, "resume")] == ["paused-by-us"]


def test_the_patches_suspend_and_mark_then_resume_and_unmark():
    pause, resume = (offline.patch(offline.Change("x", a, "")) for a in ("pause", "resume"))
    assert pause == {"metadata": {"annotations": {"colocate.io/paused-by": offline.PAUSED_BY}},
                     "spec": {"runPolicy": {"suspend": True}}}
    # a JSON merge patch deletes a key set to null
    assert resume == {"metadata": {"annotations": {"colocate.io/paused-by": None}},
                      "spec": {"runPolicy": {"suspend": False}}}


def test_the_reference_tfjobs_do_not_set_suspend_so_argo_cd_leaves_a_pause_alone():
    for path in (ROOT / "dist/apps/training").glob("tfjob.*.yaml"):
        assert "suspend" not in yaml_load(path.read_text())["spec"]["runPolicy"], path


def test_a_missing_kubeconfig_is_a_clear_error(tmp_path):
    proc = colocate("offline", "pause", "--kubeconfig", str(tmp_path / "nonexistent"))
    assert proc.returncode == 2 and "nonexistent" in proc.stderr and "Traceback" not in proc.stderr


def test_an_answer_that_is_not_a_list_is_a_clear_error(tmp_path):
    """An API server (here a hostile one on loopback) whose TFJob list has ``items`` as a mapping:
    exit 2 with the reason, never a traceback or exit 3."""

    answer = {"apiVersion": "kubeflow.org/v1", "kind": "TFJobList", "items": {"a": 1}}
    with json_server(lambda path, query: answer) as url:
        kubeconfig = kubeconfig_for(url, tmp_path)
        proc = colocate("offline", "pause", "--namespace", "training", "--kubeconfig", str(kubeconfig))
    assert proc.returncode == 2 and "did not return a list of items" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def _queue(stop: str | None = None, paused_by: str | None = None) -> dict:
    queue = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "training"}, "spec": {}}
    if stop:
        queue["spec"]["stopPolicy"] = stop
    if paused_by:
        queue["metadata"]["annotations"] = {"colocate.io/paused-by": paused_by}
    return queue


def test_with_kueue_pause_holds_and_drains_the_queue_once():
    change = offline.plan_hold(_queue(), "pause")
    assert (change.name, change.action) == ("training", "pause")
    assert offline.hold_patch(change) == {"metadata": {"annotations": {"colocate.io/paused-by": offline.PAUSED_BY}},
                                          "spec": {"stopPolicy": "HoldAndDrain"}}
    assert offline.plan_hold(_queue("HoldAndDrain", offline.PAUSED_BY), "pause") is None
    # A queue someone holds (admitted jobs run to completion) is drained by the pause all the same.
    assert offline.plan_hold(_queue("Hold"), "pause").reason == "stopPolicy Hold -> HoldAndDrain"


def test_with_kueue_resume_releases_only_a_hold_pause_set():
    change = offline.plan_hold(_queue("HoldAndDrain", offline.PAUSED_BY), "resume")
    assert offline.hold_patch(change) == {"metadata": {"annotations": {"colocate.io/paused-by": None}},
                                          "spec": {"stopPolicy": "None"}}
    assert offline.plan_hold(_queue("HoldAndDrain"), "resume") is None  # held by hand: stays held
    assert offline.plan_hold(_queue(), "resume") is None


def test_the_schedule_holds_the_queue_when_kueue_admits_training():
    from colocate import app
    from tests.test_kueue import queued_config

    rendered = app.render_files(app.build(queued_config()))
    pause = yaml_load(rendered["apps/training-control/cronjob.colocate-system.colocate-offline-pause-training.yaml"])
    args = pause["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    # --namespace: where resume waits for the paused pods to be gone (tests/simulate/test_offline_hold.py).
    assert args == ["offline", "pause", "--cluster-queue", "training", "--namespace", "training"]
    role = yaml_load(rendered["apps/training-control/clusterrole.colocate-offline-training.yaml"])
    assert role["rules"] == [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"],
                              "resourceNames": ["training"], "verbs": ["get", "patch"]}]
    pods = yaml_load(rendered["apps/training-control/role.training.colocate-offline.yaml"])
    assert pods["rules"] == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]


def test_several_namespaces_without_a_queue_are_refused(tmp_path):
    proc = colocate("offline", "pause", "--namespace", "training", "--namespace", "research",
                    "--kubeconfig", str(tmp_path / "none"))
    assert proc.returncode == 2, proc.stderr
    assert "--namespace" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("item,said", [
    ("a string", "not a TFJob"),
    ({"kind": "Pod", "metadata": {"name": "web"}}, "is a Pod, not a TFJob"),
    ({"metadata": {"name": "../../namespaces/online/tfjobs/x"}}, "is not an object name"),
    ({"metadata": {"name": "\x1b[2J::error::boom\nx"}}, "is not an object name"),
    ({"metadata": {"name": 7}}, "is not an object name"),
    ({"metadata": ["name"]}, "metadata is a list"),
    ({"metadata": {"name": "job", "annotations": "paused"}}, "metadata.annotations is a str"),
    ({"metadata": {"name": "job"}, "spec": {"runPolicy": True}}, "spec.runPolicy is a bool"),
    ({"metadata": {"name": "job"}, "status": {"conditions": ["Running"]}}, "not a condition"),
], ids=["string", "pod", "path", "escapes", "number", "metadata-list", "annotations", "run-policy", "conditions"])
@pytest.mark.parametrize("action", ["pause", "resume"])
def test_an_item_that_is_not_a_tfjob_is_exit_2_before_any_patch(tmp_path, item, said, action):
    """The list is checked whole before the first patch: a hostile or broken API server gets exit 2
    naming the problem, its text escaped, never a traceback, a request to another path or a patch."""
    seen = []
    answer = {"apiVersion": "kubeflow.org/v1", "kind": "TFJobList", "items": [_job("running", "Created"), item]}
    with json_server(lambda path, query: seen.append(path) or answer) as url:
        proc = colocate("offline", action, "--namespace", "training", "--kubeconfig", str(kubeconfig_for(url, tmp_path)))
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "\x1b" not in proc.stderr and "\n::error::" not in proc.stderr
    assert seen == ["/apis/kubeflow.org/v1/namespaces/training/tfjobs"]  # one GET: no PATCH was tried


def test_a_queue_that_is_not_a_cluster_queue_is_exit_2(tmp_path):
    answer = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "training",
                                                                                          "annotations": ["x"]}}
    with json_server(lambda path, query: answer) as url:
        proc = colocate("offline", "resume", "--cluster-queue", "training", "--kubeconfig", str(kubeconfig_for(url, tmp_path)))
    assert proc.returncode == 2 and "metadata.annotations is a list" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


@contextlib.contextmanager
def _silent_server():
    """An API server that accepts the connection and never answers."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            time.sleep(20)

        do_PATCH = do_POST = do_DELETE = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_every_request_has_a_timeout(tmp_path, monkeypatch):
    """A call the API server never answers ends in a clear error after REQUEST_TIMEOUT, not never:
    the pause CronJob would otherwise hang past the day peak with training still running."""
    from colocate.errors import ColocateError
    from colocate.incluster import kube

    monkeypatch.setattr(kube, "REQUEST_TIMEOUT", 1)
    with _silent_server() as url:
        api = kube.api_client(str(kubeconfig_for(url, tmp_path)))
        jobs, queues = kube.TFJobs(api), kube.ClusterQueues(api)
        calls = [lambda: jobs.list("training"), lambda: jobs.pods("training", "job"), lambda: jobs.get("training", "job"),
                 lambda: jobs.merge_patch("training", "job", {}), lambda: jobs.create("training", {"metadata": {"name": "job"}}),
                 lambda: jobs.delete("training", "job", "uid"), lambda: queues.get("training"),
                 lambda: queues.merge_patch("training", {})]
        for call in calls:
            started = time.monotonic()
            with pytest.raises(ColocateError, match="did not answer"):
                call()
            assert time.monotonic() - started < 10

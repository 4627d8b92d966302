"""The resubmitter's worker thread outlives any one job (hostile-3 R3-H6 a): an exception it did
not expect while handling one TFJob (a job without ``spec``, a shape nobody planned for) is logged
with its trace and costs that job only, never every later resubmission in every namespace.

The TFJobs API is a stand-in here: the live worker runs against the real API server in
tests/simulate/test_resubmit.py, which cannot serve a TFJob the CRD's schema refuses."""
from __future__ import annotations

import heapq
import json
import logging
import threading
import time

from prometheus_client import CollectorRegistry

from colocate.incluster.resubmit import controller, policy
from colocate.model.names import DISRUPTION_ANNOTATION

SETTINGS = policy.Settings(max_resubmissions=3, backoff_seconds=0, max_backoff_seconds=0)


class _TFJobs:
    """get/delete/wait_gone/create over a dict of jobs by name; records what it created."""

    def __init__(self, jobs: dict[str, dict], fail_create: set[str] = frozenset()):
        self.jobs, self.fail_create, self.created, self.deleted = jobs, fail_create, [], []

    def get(self, namespace, name):
        return self.jobs[name]

    def delete(self, namespace, name, uid):
        self.deleted.append(name)

    def wait_gone(self, namespace, name, uid, timeout, stop):
        return True

    def create(self, namespace, body):
        if body["metadata"]["name"] in self.fail_create:
            self.fail_create = self.fail_create - {body["metadata"]["name"]}
            raise TypeError("an answer of a shape nobody planned for")
        self.created.append(body["metadata"]["name"])
        return {**body, "metadata": {**body["metadata"], "uid": "new-" + body["metadata"]["name"]}}


def _failed_job(name: str, uid: str, spec: bool = True) -> dict:
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
           "metadata": {"name": name, "namespace": "training", "uid": uid, "annotations": {
               DISRUPTION_ANNOTATION: json.dumps({"reason": "PreemptionByScheduler", "pod": f"{name}-worker-0",
                                                  "uid": uid, "time": ""})}},
           "status": {"conditions": [{"type": "Failed", "status": "True",
                                      "lastTransitionTime": "2026-12-04T09:00:00Z"}]}}
    if spec:
        job["spec"] = {"tfReplicaSpecs": {}}
    return job


def _worker(jobs: _TFJobs, queued: list[tuple[str, str]]):
    from kubernetes import client

    api = client.ApiClient(client.Configuration(host="http://127.0.0.1:1"))
    resubmitter = controller.Resubmitter(api, SETTINGS, controller.Metrics(["training"], CollectorRegistry()))
    resubmitter.jobs = jobs
    resubmitter._event = lambda *args: None  # no API server to take Events
    for due, (name, uid) in enumerate(queued):
        heapq.heappush(resubmitter._queue, (time.time() + 0.1 * due, "training", name, uid))
        resubmitter._queued.add(uid)
    thread = threading.Thread(target=resubmitter.run_worker, daemon=True)
    thread.start()
    return resubmitter, thread


def _until(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_an_unexpected_error_on_one_job_costs_that_job_only(caplog, monkeypatch):
    monkeypatch.setattr(controller, "RETRY_SECONDS", 0.1)
    jobs = _TFJobs({"no-spec": _failed_job("no-spec", "u1", spec=False), "victim": _failed_job("victim", "u2")})
    with caplog.at_level(logging.ERROR, logger="colocate.resubmitter"):
        resubmitter, thread = _worker(jobs, [("no-spec", "u1"), ("victim", "u2")])
        _until(lambda: "victim" in jobs.created)
        alive = thread.is_alive()
        resubmitter.stop()
    assert alive and jobs.created == ["victim"], (alive, jobs.created)
    # Given up before its delete: the job is left as it is, and the log says why, with the trace.
    assert "no-spec" not in jobs.deleted
    failure = [r for r in caplog.records if "training/no-spec" in r.getMessage()]
    assert failure and failure[0].exc_info and "KeyError" in caplog.text, caplog.text
    assert "u1" not in resubmitter._queued


def test_after_its_own_delete_an_unexpected_error_is_retried_not_dropped(caplog, monkeypatch):
    """The old incarnation is gone by the resubmitter's own delete: dropping the item would lose the
    job, so the worker tries again, as it does after an API error."""
    monkeypatch.setattr(controller, "RETRY_SECONDS", 0.1)
    jobs = _TFJobs({"flaky": _failed_job("flaky", "u3")}, fail_create={"flaky"})
    with caplog.at_level(logging.ERROR, logger="colocate.resubmitter"):
        resubmitter, thread = _worker(jobs, [("flaky", "u3")])
        _until(lambda: "flaky" in jobs.created)
        alive = thread.is_alive()
        resubmitter.stop()
    assert alive and jobs.deleted == ["flaky"] and jobs.created == ["flaky"], (alive, jobs.deleted, jobs.created)
    assert "TypeError" in caplog.text

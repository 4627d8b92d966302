"""The settle's rule that a TFJob Kueue just admitted is work still to come until the operator has
made its pods (colocate.simulate.run._short_of_pods). No test here runs a simulation: the queue
scenario (tests/simulate/test_queue.py) is where a settle ending too early shows."""
from __future__ import annotations

from colocate.model.names import JOB_NAME_LABEL
from colocate.simulate.run import _short_of_pods


def _job(name, suspend=False, replicas=(1, 2), state=None):
    conditions = [{"type": state, "status": "True"}] if state else []
    return {"metadata": {"name": name, "namespace": "training", "uid": f"uid-{name}"},
            "spec": {"runPolicy": {"suspend": suspend},
                     "tfReplicaSpecs": {kind: {"replicas": n} for kind, n in zip(("Chief", "Worker"), replicas)}},
            "status": {"conditions": conditions}}


def _pods(job, n, deleting=0):
    return [{"metadata": {"name": f"{job}-{i}", "namespace": "training", "labels": {JOB_NAME_LABEL: job},
                          **({"deletionTimestamp": "now"} if i < deleting else {})}} for i in range(n)]


def test_a_resumed_job_without_all_its_pods_is_behind():
    assert _short_of_pods([_job("a", state="Created")], [], set(), set()) == ["a"]
    assert _short_of_pods([_job("a", state="Created")], _pods("a", 2), set(), set()) == ["a"]
    assert _short_of_pods([_job("a", state="Running")], _pods("a", 3, deleting=1), set(), set()) == ["a"]
    assert _short_of_pods([_job("a", state="Running")], _pods("a", 3), set(), set()) == []


def test_a_suspended_job_is_behind_only_once_admitted():
    assert _short_of_pods([_job("a", suspend=True)], [], set(), set()) == []
    assert _short_of_pods([_job("a", suspend=True)], [], {"uid-a"}, set()) == ["a"]


def test_a_finished_job_or_one_the_operator_warned_about_is_not_waited_for():
    for state in ("Succeeded", "Failed"):
        assert _short_of_pods([_job("a", state=state)], [], set(), set()) == []
    # FailedCreatePod under a quota: the operator said why it has no pods.
    assert _short_of_pods([_job("a", state="Created")], [], set(), {"uid-a"}) == []

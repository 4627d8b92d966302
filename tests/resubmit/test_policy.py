"""The resubmitter's decisions on real object shapes: a pod's DisruptionTarget condition as the
scheduler, the taint manager, the eviction API and the kubelet write it, and TFJob status as
training-operator v1.7.0 writes it. The same decisions run live in tests/simulate/test_resubmit.py."""
from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

from colocate import ROOT
from colocate.model.names import (DISRUPTION_ANNOTATION, DISRUPTION_REASONS, MAX_RESUBMISSIONS_ANNOTATION,
                                   RESUBMISSIONS_ANNOTATION)
from colocate.incluster.resubmit import policy
from tests.helpers import yaml_load

T0 = datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)
UID = "0b7c3d9e-1111-4222-8333-944455556666"
SETTINGS = policy.Settings(max_resubmissions=3, backoff_seconds=30, max_backoff_seconds=100)


def _ts(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def pod(reason: str = "PreemptionByScheduler", status: str = "True", owner_kind: str = "TFJob") -> dict:
    return {"metadata": {"name": "tf-mnist-dist-worker-1", "namespace": "training",
                         "labels": {"training.kubeflow.org/job-name": "tf-mnist-dist"},
                         "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": owner_kind, "name": "tf-mnist-dist",
                                              "uid": UID, "controller": True, "blockOwnerDeletion": True}]},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True"},
                # kube-scheduler v1.28.15 pkg/scheduler/framework/preemption/preemption.go prepareCandidate
                {"type": "DisruptionTarget", "status": status, "reason": reason,
                 "message": "Kubernetes default scheduler: preempting to accommodate a higher priority pod",
                 "lastTransitionTime": _ts(T0)}]}}


def tfjob(failed_at: datetime | None = T0 + timedelta(seconds=2), evidence: policy.Disruption | None = None,
          count: int | None = None, cap: str | None = None) -> dict:
    job = yaml_load((ROOT / "dist/apps/training/tfjob.training.tf-mnist-dist.yaml").read_text())
    job["metadata"]["uid"] = UID
    annotations = job["metadata"].setdefault("annotations", {})
    if evidence:
        annotations[DISRUPTION_ANNOTATION] = evidence.to_json()
    if count is not None:
        annotations[RESUBMISSIONS_ANNOTATION] = str(count)
    if cap is not None:
        annotations[MAX_RESUBMISSIONS_ANNOTATION] = cap
    conditions = [{"type": "Created", "status": "True", "lastTransitionTime": _ts(T0 - timedelta(hours=1))},
                  {"type": "Running", "status": "False" if failed_at else "True"}]
    if failed_at:
        # training-operator v1.7.0 tfjob_controller.go UpdateJobStatus
        conditions.append({"type": "Failed", "status": "True", "reason": "TFJobFailed",
                           "message": "TFJob training/tf-mnist-dist has failed because 1 Worker replica(s) failed.",
                           "lastTransitionTime": _ts(failed_at)})
    job["status"] = {"conditions": conditions}
    return job


@pytest.mark.parametrize("reason", DISRUPTION_REASONS)
def test_each_disruption_reason_is_evidence_against_the_owning_incarnation(reason):
    evidence = policy.disruption_of(pod(reason))
    assert evidence == policy.Disruption(reason, "tf-mnist-dist-worker-1", UID, _ts(T0))
    assert policy.Disruption.from_json(evidence.to_json()) == evidence


@pytest.mark.parametrize("changed", [{"reason": "Evicted"}, {"status": "False"}, {"owner_kind": "ReplicaSet"}])
def test_other_conditions_and_owners_are_no_evidence(changed):
    assert policy.disruption_of(pod(**changed)) is None


def test_a_failure_after_a_disruption_is_resubmitted_after_the_backoff():
    evidence = policy.disruption_of(pod())
    decision = policy.decide(tfjob(evidence=evidence), SETTINGS)
    assert decision.action == "resubmit" and decision.count == 1
    assert decision.due == T0 + timedelta(seconds=2 + 30)


def test_the_backoff_doubles_and_is_capped():
    assert [policy.backoff(n, SETTINGS).total_seconds() for n in range(4)] == [30, 60, 100, 100]


def test_a_genuine_failure_is_never_resubmitted():
    decision = policy.decide(tfjob(), SETTINGS)
    assert decision.action == "none" and "genuine" in decision.why


def test_evidence_of_an_earlier_incarnation_does_not_count():
    old = policy.Disruption("PreemptionByScheduler", "tf-mnist-dist-worker-1", "another-uid", _ts(T0))
    assert policy.decide(tfjob(evidence=old), SETTINGS).action == "none"


def test_a_failure_long_after_the_disruption_is_genuine():
    evidence = policy.disruption_of(pod())
    decision = policy.decide(tfjob(failed_at=T0 + timedelta(hours=2), evidence=evidence), SETTINGS)
    assert decision.action == "none" and "long after" in decision.why


def test_a_running_job_needs_nothing():
    assert policy.decide(tfjob(failed_at=None, evidence=policy.disruption_of(pod())), SETTINGS).action == "none"


def test_at_its_cap_a_job_is_given_up_and_its_own_annotation_may_only_lower_the_cap():
    evidence = policy.disruption_of(pod())
    assert policy.decide(tfjob(evidence=evidence, count=3), SETTINGS).action == "give-up"
    # Anyone who may patch the TFJob writes the annotation: a raised cap is not endless resubmission.
    assert policy.decide(tfjob(evidence=evidence, count=3, cap="4"), SETTINGS).action == "give-up"
    assert policy.decide(tfjob(evidence=evidence, count=3, cap="2000"), SETTINGS).action == "give-up"
    assert policy.decide(tfjob(evidence=evidence, count=1, cap="2"), SETTINGS).action == "resubmit"
    assert policy.decide(tfjob(evidence=evidence, count=0, cap="0"), SETTINGS).action == "give-up"


def test_a_count_of_thousands_under_a_raised_cap_neither_overflows_nor_resubmits():
    """Counts 1100 and a cap of 2000 made 2**1100 overflow the float backoff and killed the worker."""
    evidence = policy.disruption_of(pod())
    assert policy.decide(tfjob(evidence=evidence, count=1100, cap="2000"), SETTINGS).action == "give-up"
    wide = policy.Settings(max_resubmissions=5000, backoff_seconds=30, max_backoff_seconds=900)
    decision = policy.decide(tfjob(evidence=evidence, count=1100, cap="2000"), wide)
    assert decision.action == "resubmit" and decision.due == T0 + timedelta(seconds=2) + timedelta(seconds=900)


def test_evidence_with_a_time_without_offset_is_read_as_utc():
    evidence = policy.Disruption("PreemptionByScheduler", "p", UID, "2026-12-04T09:00:00")
    assert policy.decide(tfjob(evidence=evidence), SETTINGS).action == "resubmit"


_ANNOTATION = st.one_of(st.text(max_size=40), st.integers(-10**30, 10**30).map(str),
                        st.sampled_from(["nan", "inf", "-inf", "1e308", "0x10", " 7 ", "١٠", "", "{}", "[" * 5000]))


@settings(max_examples=300, deadline=None)
@given(count=_ANNOTATION, cap=_ANNOTATION, evidence=st.one_of(_ANNOTATION, st.builds(
    lambda reason, uid, time: json.dumps({"reason": reason, "pod": "p", "uid": uid, "time": time}),
    st.text(max_size=10), st.sampled_from([UID, "other"]), _ANNOTATION)))
def test_no_annotation_value_stops_a_decision(count, cap, evidence):
    """Tenants write these annotations: whatever they hold, decide answers, and never resubmits
    past the controller's cap."""
    job = tfjob()
    job["metadata"]["annotations"].update({RESUBMISSIONS_ANNOTATION: count, MAX_RESUBMISSIONS_ANNOTATION: cap,
                                          DISRUPTION_ANNOTATION: evidence})
    decision = policy.decide(job, SETTINGS)
    assert decision.action in ("none", "give-up", "resubmit")
    assert decision.action != "resubmit" or decision.count <= SETTINGS.max_resubmissions


@pytest.mark.parametrize("text", ["٣", "١٠", " 7 ", "7\n", "1_0", "+2", "-1", "0x3", "3.0", "1e2", "１", "1234567"])
def test_an_annotation_that_is_not_plain_ascii_digits_counts_as_absent(text):
    """int() reads "٣" as 3, " 7 " as 7 and "1_0" as 10, and a cap of "-1" gave up at once: only
    ASCII decimal digits count; otherwise the count is 0 and the cap is the controller's."""
    job = tfjob(count=None, cap=text)
    job["metadata"]["annotations"][RESUBMISSIONS_ANNOTATION] = text
    assert policy.count_of(job) == 0
    assert policy.cap_of(job, SETTINGS) == SETTINGS.max_resubmissions


@settings(max_examples=200, deadline=None)
@given(count=st.integers(0, 999_999), cap=st.integers(0, 999_999))
def test_plain_ascii_digits_are_read_exactly(count, cap):
    job = tfjob(count=count, cap=str(cap))
    assert policy.count_of(job) == count
    assert policy.cap_of(job, SETTINGS) == min(cap, SETTINGS.max_resubmissions)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=12).filter(lambda t: not t.isascii() or not t.isdigit()))
def test_any_other_annotation_text_is_absent(text):
    job = tfjob(cap=text)
    job["metadata"]["annotations"][RESUBMISSIONS_ANNOTATION] = text
    assert (policy.count_of(job), policy.cap_of(job, SETTINGS)) == (0, SETTINGS.max_resubmissions)


def test_the_new_incarnation_keeps_name_spec_labels_and_annotations_minus_the_evidence():
    job = tfjob(evidence=policy.disruption_of(pod()), count=1)
    job["metadata"]["labels"]["app.kubernetes.io/instance"] = "colocate-training"  # Argo CD's tracking label
    job["metadata"].update(resourceVersion="42", creationTimestamp=_ts(T0), generation=3)
    body = policy.resubmission(copy.deepcopy(job), 2)
    assert body["spec"] == job["spec"] and body["metadata"]["name"] == "tf-mnist-dist"
    assert body["metadata"]["labels"] == job["metadata"]["labels"]
    assert body["metadata"]["annotations"][RESUBMISSIONS_ANNOTATION] == "2"
    assert DISRUPTION_ANNOTATION not in body["metadata"]["annotations"]
    assert set(body["metadata"]) == {"name", "namespace", "labels", "annotations"}
    assert "status" not in body
    json.dumps(body)  # what the API client sends


def test_the_count_decays_once_an_incarnation_ran_long_enough_before_its_disruption():
    evidence = policy.Disruption("PreemptionByScheduler", "tf-mnist-dist-worker-1", UID, _ts(T0))
    flappy = tfjob(evidence=evidence, count=3)
    flappy["status"]["startTime"] = _ts(T0 - timedelta(minutes=50))
    assert policy.decide(flappy, SETTINGS).action == "give-up"
    steady = tfjob(evidence=evidence, count=3)
    steady["status"]["startTime"] = _ts(T0 - timedelta(seconds=SETTINGS.count_decay_seconds))
    decision = policy.decide(steady, SETTINGS)
    assert decision.action == "resubmit" and decision.count == 1, decision
    # The annotations a tenant can write do not move it: only the status the operator writes does.
    steady["metadata"]["annotations"]["startTime"] = _ts(T0 - timedelta(days=9))
    flappy["metadata"]["annotations"]["startTime"] = _ts(T0 - timedelta(days=9))
    assert policy.decide(flappy, SETTINGS).action == "give-up"

"""What the resubmitter decides, as pure functions of the objects it reads (no API calls here).

A TFJob is resubmitted only when all of these hold (docs/resubmission.md):
- it is ``Failed`` (training-operator v1.7.0 never runs a Failed job again);
- one of its pods carried the ``DisruptionTarget`` condition with a reason that is not the job's
  fault, recorded on this incarnation of the job (its uid) while the pod still existed;
- the job failed within ``FAILURE_WINDOW`` of that disruption (a later, genuine failure of the
  same incarnation is not the disruption's doing);
- it has been resubmitted fewer times than its cap. Beyond the cap it is given up.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

from colocate.model.names import (DISRUPTION_ANNOTATION, DISRUPTION_CONDITION, DISRUPTION_REASONS, JOB_NAME_LABEL,
                                   MAX_RESUBMISSIONS_ANNOTATION, RESUBMISSIONS_ANNOTATION, TFJOB_KIND)

#: How long after the disruption a failure still counts as caused by it. The operator fails the
#: job as soon as it sees the terminating pod (seconds); the margin covers a slow operator.
FAILURE_WINDOW = timedelta(minutes=10)
#: Annotations the resubmitter never copies to the new incarnation: the old one's evidence, and
#: what only the API server or kubectl own.
_NOT_COPIED = (DISRUPTION_ANNOTATION,)


@dataclass(frozen=True)
class Settings:
    #: Resubmissions per job before it is given up (a job's own annotation may lower it, never
    #: raise it: anyone who may patch the TFJob can write the annotation).
    max_resubmissions: int = 5
    #: Delay before the first resubmission; doubled for each one after it.
    backoff_seconds: float = 30.0
    #: The longest delay.
    max_backoff_seconds: float = 900.0
    #: How long the old incarnation may take to go (its pods' grace period, then the garbage
    #: collector) before the resubmission counts as blocked; it is retried for as long as it takes.
    blocked_after_seconds: float = 300.0
    #: An incarnation that ran this long before its disruption starts the count again: one flappy
    #: evening is forgotten, a job preempted every hour still reaches the cap.
    count_decay_seconds: float = 7200.0


@dataclass(frozen=True)
class Disruption:
    """Evidence that a pod of one TFJob incarnation was disrupted."""

    reason: str
    pod: str
    uid: str  # the TFJob's uid
    time: str  # RFC 3339, the condition's lastTransitionTime

    def to_json(self) -> str:
        return json.dumps({"reason": self.reason, "pod": self.pod, "uid": self.uid, "time": self.time}, sort_keys=True)

    @staticmethod
    def from_json(text: str | None) -> "Disruption | None":
        try:
            data = json.loads(text or "")
            return Disruption(str(data["reason"]), str(data["pod"]), str(data["uid"]), str(data["time"]))
        except (ValueError, KeyError, TypeError, RecursionError):  # a deeply nested value: RecursionError
            return None


@dataclass(frozen=True)
class Decision:
    """``resubmit`` at ``due`` (count is the number it will carry), ``give-up``, or ``none``."""

    action: str
    why: str
    count: int = 0
    due: datetime | None = None
    disruption: Disruption | None = None


def parse_time(text: str | None) -> datetime | None:
    """An RFC 3339 time; one without an offset is UTC, as the API server writes every time (a naive
    datetime would break the arithmetic with the aware ones below)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def disruption_of(pod: Mapping[str, Any]) -> Disruption | None:
    """The pod's DisruptionTarget condition as evidence against its owning TFJob, or None when the
    pod is not a TFJob's or was not disrupted for a reason that is not the job's fault."""
    meta = pod.get("metadata") or {}
    owner = next((r for r in meta.get("ownerReferences") or [] if r.get("kind") == TFJOB_KIND and r.get("controller")),
                 None)
    if owner is None or JOB_NAME_LABEL not in (meta.get("labels") or {}):
        return None
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if (condition.get("type") == DISRUPTION_CONDITION and condition.get("status") == "True"
                and condition.get("reason") in DISRUPTION_REASONS):
            return Disruption(condition["reason"], meta.get("name", ""), owner.get("uid", ""),
                              condition.get("lastTransitionTime") or "")
    return None


def failed_at(job: Mapping[str, Any]) -> datetime | None:
    """When the job's Failed condition became True, None while it is not Failed."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Failed" and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime")) or datetime.now(timezone.utc)
    return None


#: An annotation number: ASCII decimal digits only. int() also takes "٣", " 7 " and "1_0", and a
#: sign ("-1" as a cap would mean "give up at once"); anything else counts as absent.
_ANNOTATION_NUMBER = re.compile(r"[0-9]{1,6}")


def _number(job: Mapping[str, Any], key: str) -> int | None:
    value = ((job.get("metadata") or {}).get("annotations") or {}).get(key)
    if isinstance(value, str) and _ANNOTATION_NUMBER.fullmatch(value):
        return int(value)
    return None


def count_of(job: Mapping[str, Any]) -> int:
    """The job's resubmission count; 0 when the annotation is absent or not a plain number."""
    count = _number(job, RESUBMISSIONS_ANNOTATION)
    return 0 if count is None else count


def cap_of(job: Mapping[str, Any], settings: Settings) -> int:
    """The job's cap: its annotation where that is lower than the controller's, else the controller's
    (also when the annotation is not a plain number)."""
    own = _number(job, MAX_RESUBMISSIONS_ANNOTATION)
    return settings.max_resubmissions if own is None else min(own, settings.max_resubmissions)


#: Doublings past this only ever reach the cap (2**40 s is 35,000 years): 2**count for a count of
#: thousands would overflow the float product.
_MAX_DOUBLINGS = 40


def backoff(count: int, settings: Settings) -> timedelta:
    """The delay before resubmission number ``count + 1``: doubling, capped."""
    doublings = min(max(count, 0), _MAX_DOUBLINGS)
    return timedelta(seconds=min(settings.max_backoff_seconds, settings.backoff_seconds * 2 ** doublings))


def decide(job: Mapping[str, Any], settings: Settings) -> Decision:
    meta = job.get("metadata") or {}
    failed = failed_at(job)
    if failed is None:
        return Decision("none", "not Failed")
    if meta.get("deletionTimestamp"):
        return Decision("none", "being deleted")
    evidence = Disruption.from_json((meta.get("annotations") or {}).get(DISRUPTION_ANNOTATION))
    if evidence is None or evidence.uid != meta.get("uid"):
        return Decision("none", "Failed with no disruption of its pods on record: a genuine failure")
    disrupted = parse_time(evidence.time) or failed
    if abs(failed - disrupted) > FAILURE_WINDOW:
        return Decision("none", f"Failed {failed.isoformat()}, long after its pod {evidence.pod} was disrupted "
                        f"({evidence.time}): a genuine failure", disruption=evidence)
    count, cap = count_of(job), cap_of(job, settings)
    started = parse_time((job.get("status") or {}).get("startTime"))
    if count and started and disrupted - started >= timedelta(seconds=settings.count_decay_seconds):
        # status.startTime: when this incarnation last started running (training-operator v1.7.0
        # sets it at every start and resume, pkg/controller.v1/common/job.go); a status field,
        # which a tenant who may patch the TFJob cannot write.
        count = 0
    if count >= cap:
        return Decision("give-up", f"resubmitted {count} time(s), its cap is {cap}", count=count, disruption=evidence)
    return Decision("resubmit", f"pod {evidence.pod}: {evidence.reason}", count=count + 1,
                    due=failed + backoff(count, settings), disruption=evidence)


def resubmission(job: Mapping[str, Any], count: int) -> dict[str, Any]:
    """The new incarnation: the same spec under the same name, labels (Argo CD's tracking label
    among them) and annotations, minus the old evidence, with the new count."""
    meta = job["metadata"]
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in _NOT_COPIED}
    annotations[RESUBMISSIONS_ANNOTATION] = str(count)
    metadata: dict[str, Any] = {"name": meta["name"], "namespace": meta["namespace"], "annotations": annotations}
    if meta.get("labels"):
        metadata["labels"] = dict(meta["labels"])
    return {"apiVersion": job["apiVersion"], "kind": job["kind"], "metadata": metadata, "spec": job["spec"]}

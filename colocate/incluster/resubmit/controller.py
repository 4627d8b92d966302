"""The resubmitter: kopf watches the TFJobs and their pods in the training namespaces; this module
records disruption evidence on the TFJob while the disrupted pod still exists, and re-creates a
TFJob that then failed, after a backoff, under the same name and spec (docs/resubmission.md).

kopf (nolar/kopf) brings the watch streams, their re-listing and reconnects, and the handler
threads; ``on.event`` handlers keep no state on the objects (no annotations, no finalizers), so
Argo CD sees nothing of kopf. The delays live in one worker thread here, not in kopf timers,
because kopf puts a finalizer on every object a timer or daemon serves."""
from __future__ import annotations

import heapq
import json
import logging
import threading
import time
from datetime import datetime, timezone
from typing import Any, Mapping

from colocate.incluster.kube import REQUEST_TIMEOUT, TFJobs, refusal, status
from colocate.errors import ColocateError
from colocate.model.names import (BLOCKED_METRIC, BLOCKED_REASON, DISRUPTION_ANNOTATION, DISRUPTION_REASONS,
                                   GAVE_UP_REASON, GIVEN_UP_METRIC, JOB_NAME_LABEL, RESUBMISSIONS_METRIC, RESUBMITTED_REASON, RESUBMITTER, TFJOB_GROUP,
                                   TFJOB_KIND, TFJOB_PLURAL, TFJOB_VERSION)
from colocate.incluster.resubmit import policy

log = logging.getLogger("colocate.resubmitter")

#: A resubmission that failed (or whose old incarnation is not gone yet) is retried this often.
RETRY_SECONDS = 10.0


class Metrics:
    """``colocate_tfjob_resubmissions_total{namespace,reason}``, ``colocate_tfjob_given_up{namespace,tfjob}``
    and ``colocate_tfjob_resubmission_blocked{namespace,tfjob}``."""

    def __init__(self, namespaces, registry=None):
        from prometheus_client import REGISTRY, Counter, Gauge

        registry = registry or REGISTRY
        self.resubmissions = Counter(RESUBMISSIONS_METRIC.removesuffix("_total"),
                                     "TFJobs re-created after a disruption failed them, by the disruption's reason",
                                     ["namespace", "reason"], registry=registry)
        self.given_up = Gauge(GIVEN_UP_METRIC, "1 while a disrupted TFJob is left Failed because it reached its "
                              "resubmission cap", ["namespace", "tfjob"], registry=registry)
        self.blocked = Gauge(BLOCKED_METRIC, "1 while a TFJob's resubmission waits for pods of its old incarnation "
                             "that stay terminating past the wait (a node that no longer reports)",
                             ["namespace", "tfjob"], registry=registry)
        for namespace in namespaces:  # every series exists from the start, so rate() and absent() work
            for reason in DISRUPTION_REASONS:
                self.resubmissions.labels(namespace, reason)


class Resubmitter:
    def __init__(self, api, settings: policy.Settings, metrics: Metrics):
        from kubernetes import client

        self.jobs = TFJobs(api)
        self.core = client.CoreV1Api(api)
        self.settings, self.metrics = settings, metrics
        self._queue: list[tuple[float, str, str, str]] = []  # (due, namespace, name, uid)
        self._queued: set[str] = set()  # uids
        self._gave_up: set[str] = set()  # uids given up (one Event each)
        self._left: set[str] = set()  # uids Failed for a reason of their own (logged once)
        self._recorded: set[str] = set()  # TFJob uids with evidence on them
        #: uid -> (next incarnation, decision) of a TFJob deleted for resubmission and not yet
        #: re-created: its delete is ours, so "being deleted" is no reason to drop it.
        self._pending: dict[str, tuple[dict[str, Any], policy.Decision]] = {}
        self._blocked: set[str] = set()  # uids with a ResubmissionBlocked Event
        self._lock = threading.Condition()
        self._stop = threading.Event()

    # --- handlers (kopf threads) ---------------------------------------------------------------
    def on_pod(self, pod: Mapping[str, Any]) -> None:
        """Record the first disruption of a TFJob incarnation on the TFJob, before the pod is gone."""
        evidence = policy.disruption_of(pod)
        if evidence is None or evidence.uid in self._recorded:
            return
        namespace, job = pod["metadata"]["namespace"], pod["metadata"]["labels"][JOB_NAME_LABEL]
        try:
            current = self.jobs.get(namespace, job)
        except ColocateError as exc:
            log.warning("TFJob %s/%s of disrupted pod %s: %s", namespace, job, evidence.pod, exc)
            return
        meta = current["metadata"]
        if meta.get("uid") != evidence.uid:
            return  # the pod belongs to an incarnation that is already gone
        recorded = policy.Disruption.from_json((meta.get("annotations") or {}).get(DISRUPTION_ANNOTATION))
        if recorded is None or recorded.uid != evidence.uid:
            # metadata.uid in a patch is a precondition: a newer incarnation refuses it (409).
            self.jobs.merge_patch(namespace, job, {"metadata": {"uid": evidence.uid, "annotations": {
                DISRUPTION_ANNOTATION: evidence.to_json()}}})
            log.info("TFJob %s/%s: pod %s disrupted (%s), evidence recorded", namespace, job, evidence.pod,
                     evidence.reason)
        self._recorded.add(evidence.uid)

    def on_tfjob(self, event_type: str | None, job: Mapping[str, Any]) -> None:
        meta = job["metadata"]
        namespace, name, uid = meta["namespace"], meta["name"], meta.get("uid", "")
        decision = policy.decide(job, self.settings) if event_type != "DELETED" else policy.Decision("none", "deleted")
        if decision.action == "none" and decision.disruption is None and policy.failed_at(job) and uid not in self._left:
            # The operator may fail the job before the pod watch delivered the disruption: ask its pods.
            for pod in self._pods_of(namespace, name):
                if (evidence := policy.disruption_of(pod)) and evidence.uid == uid:
                    self.on_pod(pod)
                    return  # the evidence patch brings this job back as a new event
        if decision.action != "give-up" and (namespace, name) in self._given_up_series():
            self.metrics.given_up.remove(namespace, name)  # deleted, a new incarnation, or it ran again
        if decision.action == "resubmit":
            self._enqueue(decision.due.timestamp(), namespace, name, uid)
        elif (decision.action == "none" and policy.failed_at(job) and uid not in self._left
              and event_type != "DELETED" and not meta.get("deletionTimestamp")):
            self._left.add(uid)
            log.info("TFJob %s/%s Failed, not resubmitted: %s", namespace, name, decision.why)
        elif decision.action == "give-up":
            self.metrics.given_up.labels(namespace, name).set(1)
            if uid not in self._gave_up:
                self._gave_up.add(uid)
                self._event(job, "Warning", GAVE_UP_REASON,
                            f"Not resubmitted: {decision.why}; it stays Failed. Find why its pods keep being "
                            f"disrupted (kubectl describe on them), then delete it or raise its "
                            f"colocate.io/max-resubmissions annotation")
                log.warning("TFJob %s/%s given up: %s", namespace, name, decision.why)

    def _pods_of(self, namespace: str, name: str) -> list[dict[str, Any]]:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            answer = self.core.list_namespaced_pod(namespace, label_selector=f"{JOB_NAME_LABEL}={name}",
                                                   _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
        except (ApiException, HTTPError, OSError) as exc:
            log.warning("pods of TFJob %s/%s: %s", namespace, name, refusal(exc))
            return []
        return json.loads(answer.data).get("items") or []

    def _given_up_series(self) -> set[tuple[str, str]]:
        return {tuple(s.labels[k] for k in ("namespace", "tfjob")) for m in self.metrics.given_up.collect()
                for s in m.samples}

    # --- the delayed work ------------------------------------------------------------------------
    def _enqueue(self, due: float, namespace: str, name: str, uid: str) -> None:
        with self._lock:
            if uid in self._queued:
                return
            self._queued.add(uid)
            heapq.heappush(self._queue, (due, namespace, name, uid))
            self._lock.notify()
        wait = max(0.0, due - time.time())
        log.info("TFJob %s/%s failed after a disruption: resubmitting in %.0f s", namespace, name, wait)

    def run_worker(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                while not self._stop.is_set() and (not self._queue or self._queue[0][0] > time.time()):
                    self._lock.wait(timeout=min(1.0, self._queue[0][0] - time.time()) if self._queue else 1.0)
                if self._stop.is_set():
                    return
                due, namespace, name, uid = heapq.heappop(self._queue)
            try:
                self.resubmit(namespace, name, uid)
            except ColocateError as exc:
                self._retry(namespace, name, uid, str(exc))
                continue
            except Exception:  # noqa: BLE001 - one job's surprise must not end every later resubmission
                if uid in self._pending:  # its old incarnation is gone by our delete: never drop it
                    log.exception("TFJob %s/%s: resubmission failed unexpectedly", namespace, name)
                    self._retry(namespace, name, uid, "unexpected error (trace above)")
                    continue
                log.exception("TFJob %s/%s: resubmission given up: unexpected error", namespace, name)
            with self._lock:
                self._queued.discard(uid)

    def _retry(self, namespace: str, name: str, uid: str, why: str) -> None:
        log.error("TFJob %s/%s: resubmission failed, retrying in %.0f s: %s", namespace, name, RETRY_SECONDS, why)
        with self._lock:
            heapq.heappush(self._queue, (time.time() + RETRY_SECONDS, namespace, name, uid))

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._lock.notify_all()

    def resubmit(self, namespace: str, name: str, uid: str) -> None:
        """Delete incarnation ``uid`` (its pods first) and create the next one under the same name."""
        if uid not in self._pending:
            try:
                job = self.jobs.get(namespace, name)
            except ColocateError:
                return  # gone meanwhile (its file left git, or someone deleted it)
            decision = policy.decide(job, self.settings)
            if job["metadata"].get("uid") != uid or decision.action != "resubmit":
                return  # someone else acted, or it is no longer a case for resubmission
            self._pending[uid] = (policy.resubmission(job, decision.count), decision)
            try:
                self.jobs.delete(namespace, name, uid)
            except ColocateError as exc:
                if status(exc.__cause__) not in (404, 409):
                    raise
        body, decision = self._pending[uid]
        self._wait_gone(namespace, name, uid)
        try:
            new = self.jobs.create(namespace, body)
        except ColocateError as exc:
            if status(exc.__cause__) != 409:
                raise
            # Argo CD's self-heal re-created it from git first: keep that one, carry the count on.
            new = self.jobs.get(namespace, name)
            if new["metadata"].get("uid") == uid:
                raise
            new = self.jobs.merge_patch(namespace, name, {"metadata": {"annotations": {
                k: v for k, v in body["metadata"]["annotations"].items() if k.startswith("colocate.io/")}}})
        self._pending.pop(uid, None)
        if uid in self._blocked:
            self._blocked.discard(uid)
            self.metrics.blocked.remove(namespace, name)
        reason = decision.disruption.reason if decision.disruption else "unknown"
        self.metrics.resubmissions.labels(namespace, reason).inc()
        self._event(new, "Normal", RESUBMITTED_REASON,
                    f"Re-created after {decision.why} failed it (resubmission {decision.count}); it resumes from "
                    f"its checkpoint")
        log.info("TFJob %s/%s resubmitted (%d): %s", namespace, name, decision.count, decision.why)

    def _wait_gone(self, namespace: str, name: str, uid: str) -> None:
        """Wait for the old incarnation; past ``blocked_after_seconds`` (the first time) or at each
        retry, say what holds it, and raise so the worker retries: the item is never dropped."""
        timeout = RETRY_SECONDS if uid in self._blocked else self.settings.blocked_after_seconds
        if self.jobs.wait_gone(namespace, name, uid, timeout, self._stop.is_set):
            return
        stuck = [p for p in self._pods_of(namespace, name) if p["metadata"].get("deletionTimestamp")]
        held = "; ".join(f"pod {p['metadata']['name']} terminating on node {p['spec'].get('nodeName') or '?'} since "
                         f"{p['metadata']['deletionTimestamp']}" for p in stuck) or "the TFJob's own deletion"
        if uid not in self._blocked:
            self._blocked.add(uid)
            self.metrics.blocked.labels(namespace, name).set(1)
            self._event(self.jobs.get(namespace, name), "Warning", BLOCKED_REASON,
                        f"Resubmission blocked: {held}. A pod's node that stops reporting keeps it terminating "
                        f"for ever; once the node is known to be off, taint it node.kubernetes.io/out-of-service"
                        f"=nodeshutdown:NoExecute (docs/runbook-node-loss.md) and the resubmission goes on")
            log.warning("TFJob %s/%s: resubmission blocked: %s", namespace, name, held)
        raise ColocateError(f"TFJob {namespace}/{name} (uid {uid}) is not gone yet: {held}")

    def _event(self, job: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        meta = job["metadata"]
        now = datetime.now(timezone.utc)
        try:
            self.core.create_namespaced_event(meta["namespace"], {
                "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
                "involvedObject": {"apiVersion": f"{TFJOB_GROUP}/{TFJOB_VERSION}", "kind": TFJOB_KIND,
                                   "name": meta["name"], "namespace": meta["namespace"], "uid": meta.get("uid")},
                "type": type_, "reason": reason, "message": message, "count": 1,
                "firstTimestamp": now.isoformat().replace("+00:00", "Z"),
                "lastTimestamp": now.isoformat().replace("+00:00", "Z"),
                "source": {"component": RESUBMITTER}, "reportingComponent": RESUBMITTER},
                _request_timeout=REQUEST_TIMEOUT)
        except (ApiException, HTTPError, OSError) as exc:
            log.warning("Event %s on TFJob %s/%s: %s", reason, meta["namespace"], meta["name"], refusal(exc))


def register(registry, resubmitter: Resubmitter) -> None:
    """The kopf handlers, on ``registry``."""
    import kopf

    @kopf.on.event("pods", labels={JOB_NAME_LABEL: kopf.PRESENT}, registry=registry)
    def pod_event(body, **_):
        resubmitter.on_pod(body)

    @kopf.on.event(TFJOB_GROUP, TFJOB_VERSION, TFJOB_PLURAL, registry=registry)
    def tfjob_event(event, body, **_):
        resubmitter.on_tfjob(event.get("type"), body)

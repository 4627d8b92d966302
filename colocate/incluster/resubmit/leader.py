"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it
(kubernetes/client-go v0.28.15 tools/leaderelection/leaderelection.go): acquire when the Lease is
free or its holder let it lapse, renew well within its duration, and stop acting as soon as a
renewal fails past the deadline. Updates carry the read resourceVersion, so of two replicas that
race for a lapsed Lease exactly one wins (the other gets 409 Conflict).

A holder has let the Lease lapse when its record has not changed for leaseDurationSeconds by this
replica's own monotonic clock since it first saw that record (client-go ``observedTime``), never
by comparing the holder's renewTime with the local wall clock: two nodes' clocks may disagree.
Every call has a timeout shorter than the renew deadline, so a hung request cannot keep a replica
acting after its Lease could have passed to the other."""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone


log = logging.getLogger("colocate.resubmitter.leader")

LEASE_SECONDS = 15     # client-go's LeaseDuration default
RENEW_DEADLINE = 10.0  # client-go's RenewDeadline default
RETRY_SECONDS = 2.0    # client-go's RetryPeriod default
#: Per API call: a renewal that hangs fails in time for the next one within RENEW_DEADLINE.
CALL_TIMEOUT = RENEW_DEADLINE / 2


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Lease:
    def __init__(self, api, namespace: str, name: str, identity: str, clock=time.monotonic):
        from kubernetes import client

        self.api = client.CoordinationV1Api(api)
        self.namespace, self.name, self.identity = namespace, name, identity
        self._clock = clock
        self._observed: tuple | None = None  # the holder's record as last read
        self._observed_at = 0.0              # when this replica first read it (its own clock)

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this identity holds the Lease afterwards."""
        from kubernetes.client.exceptions import ApiException

        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=CALL_TIMEOUT)
        except ApiException as exc:
            if exc.status != 404:
                raise
            body = {"metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": LEASE_SECONDS,
                             "acquireTime": _now(), "renewTime": _now(), "leaseTransitions": 0}}
            try:
                self.api.create_namespaced_lease(self.namespace, body, _request_timeout=CALL_TIMEOUT)
                return True
            except ApiException as exc2:
                if exc2.status == 409:
                    return False
                raise
        spec = lease.spec
        ours = spec.holder_identity == self.identity
        record = (spec.holder_identity, str(spec.renew_time), str(spec.acquire_time), spec.lease_transitions,
                  spec.lease_duration_seconds)
        now = self._clock()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        lapsed = not spec.holder_identity or now >= self._observed_at + (spec.lease_duration_seconds or LEASE_SECONDS)
        if not ours and not lapsed:
            return False
        body = {"metadata": {"name": self.name, "namespace": self.namespace,
                             "resourceVersion": lease.metadata.resource_version},
                "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": _now(),
                         "acquireTime": _now() if not ours else spec.acquire_time,
                         "leaseTransitions": (spec.lease_transitions or 0) + (0 if ours else 1)}}
        try:
            self.api.replace_namespaced_lease(self.name, self.namespace, body, _request_timeout=CALL_TIMEOUT)
            return True
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise

    def release(self) -> None:
        """Give the Lease up on a clean stop, so the other replica takes over at once."""
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=CALL_TIMEOUT)
            if lease.spec.holder_identity == self.identity:
                self.api.replace_namespaced_lease(self.name, self.namespace, {
                    "metadata": {"name": self.name, "namespace": self.namespace,
                                 "resourceVersion": lease.metadata.resource_version},
                    "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": _now(),
                             "leaseTransitions": lease.spec.lease_transitions or 0}}, _request_timeout=CALL_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - best effort on the way out; the Lease lapses anyway
            log.warning("could not release the Lease: %s", exc)

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this identity leads (True) or ``stop`` is set (False)."""
        while not stop.is_set():
            try:
                if self.try_acquire_or_renew():
                    log.info("leading: Lease %s/%s held by %s", self.namespace, self.name, self.identity)
                    return True
            except Exception as exc:  # noqa: BLE001 - the API server may be briefly away; retry
                log.warning("Lease %s/%s: %s", self.namespace, self.name, exc)
            stop.wait(RETRY_SECONDS)
        return False

    def keep(self, stop: threading.Event, lost: threading.Event) -> None:
        """Renew every RETRY_SECONDS until ``stop``; set ``lost`` when no renewal succeeded for
        RENEW_DEADLINE seconds (another replica may lead by then)."""
        last_ok = time.monotonic()
        while not stop.wait(RETRY_SECONDS):
            try:
                if self.try_acquire_or_renew():
                    last_ok = time.monotonic()
                    continue
                log.error("Lease %s/%s is held by another replica", self.namespace, self.name)
                lost.set()
                return
            except Exception as exc:  # noqa: BLE001
                log.warning("renewing Lease %s/%s: %s", self.namespace, self.name, exc)
            if time.monotonic() - last_ok > RENEW_DEADLINE:
                log.error("lost the Lease %s/%s", self.namespace, self.name)
                lost.set()
                return

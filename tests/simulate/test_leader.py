"""The resubmitter's leader election against the real API server: a Lease lapses by this replica's
own clock since it last saw the record change (client-go v0.28.15 leaderelection.go
``observedTime``), never by the holder's ``renewTime`` read against the local wall clock, so a
holder whose clock is an hour off keeps its Lease while it renews, and a dead one loses it after
the lease duration whatever its clock said."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from colocate.incluster.kube import api_client
from colocate.incluster.resubmit.leader import LEASE_SECONDS, Lease
from colocate.simulate import toolchain
from colocate.simulate.local_cluster import ControlPlane

NAMESPACE = "colocate-system"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"


@pytest.fixture(scope="module")
def cluster():
    with ControlPlane(toolchain.ensure(log=lambda line: None)) as cp:
        cp.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        yield cp


class Clock:
    """This replica's monotonic clock, moved by the test."""
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _stamp(offset: timedelta) -> str:
    return (datetime.now(timezone.utc) + offset).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _held_by_other(cp: ControlPlane, name: str, renewed: timedelta) -> None:
    """The other replica's renewal, stamped by its clock (now + ``renewed``)."""
    spec = {"holderIdentity": "other", "leaseDurationSeconds": LEASE_SECONDS,
            "acquireTime": _stamp(timedelta(hours=-2)), "renewTime": _stamp(renewed), "leaseTransitions": 0}
    found = [lease for lease in cp.items(LEASES) if lease["metadata"]["name"] == name]
    if found:
        cp.request("PUT", f"{LEASES}/{name}", {**found[0], "spec": spec})
    else:
        cp.request("POST", LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                    "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec})


def _holder(cp: ControlPlane, name: str) -> str:
    return cp.request("GET", f"{LEASES}/{name}")["spec"].get("holderIdentity", "")


def test_a_holder_whose_clock_is_an_hour_behind_keeps_the_lease_while_it_renews(cluster):
    cp, clock = cluster, Clock()
    mine = Lease(api_client(str(cp.kubeconfig)), NAMESPACE, "behind", "me", clock=clock)
    _held_by_other(cp, "behind", timedelta(hours=-1))
    assert not mine.try_acquire_or_renew()
    clock.now += LEASE_SECONDS - 1
    assert not mine.try_acquire_or_renew()
    _held_by_other(cp, "behind", timedelta(hours=-1, seconds=LEASE_SECONDS - 1))  # it renews
    clock.now += 5
    assert not mine.try_acquire_or_renew(), "taken from a holder that renewed 5 s ago by this replica's clock"
    assert _holder(cp, "behind") == "other"
    # It stops renewing: the lease duration after this replica saw its last renewal, it is free.
    clock.now += LEASE_SECONDS
    assert mine.try_acquire_or_renew() and _holder(cp, "behind") == "me"


def test_a_dead_holder_whose_clock_was_an_hour_ahead_loses_the_lease_after_its_duration(cluster):
    cp, clock = cluster, Clock()
    mine = Lease(api_client(str(cp.kubeconfig)), NAMESPACE, "ahead", "me", clock=clock)
    _held_by_other(cp, "ahead", timedelta(hours=1))
    assert not mine.try_acquire_or_renew()
    clock.now += LEASE_SECONDS - 1
    assert not mine.try_acquire_or_renew()
    clock.now += 1
    assert mine.try_acquire_or_renew() and _holder(cp, "ahead") == "me"
    # The leader renews its own Lease whatever the record's age.
    clock.now += 3600
    assert mine.try_acquire_or_renew() and _holder(cp, "ahead") == "me"

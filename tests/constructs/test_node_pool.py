from __future__ import annotations

import pytest
import cdk8s

from colocate.constructs.node_pool import NodePool
from colocate.model.names import KUBELET_NODE_LABELS
from colocate.model.pools import KubeletReservations, NodePoolProps, Taint
from colocate.errors import PropError

GiB = 2**30


def pool(**overrides) -> NodePool:
    props = dict(name="mixed", nodes=6, cpu="32", memory="128Gi", gpus=2, labels={"role": "mixed"},
                 kubelet=KubeletReservations(system_reserved={"cpu": "500m", "memory": "4Gi"}, cpu_manager_policy="static"))
    return NodePool(cdk8s.Testing.chart(), "pool", NodePoolProps(**{**props, **overrides}))


def test_allocatable_is_capacity_minus_reservations_minus_hard_eviction():
    p = pool()
    assert p.allocatable.cpu_milli == 31_500
    assert p.allocatable.memory_bytes == 128 * GiB - 4 * GiB - 500 * 2**20
    assert p.allocatable.gpus == 2
    assert p.total_allocatable.cpu_milli == 6 * 31_500


def test_allocatable_matches_the_kubernetes_docs_example():
    # reserve-compute-resources: 16 CPU / 32Gi, kube 1/2Gi, system 0.5/1Gi, eviction 500Mi -> "14.5 CPU,
    # 28.5Gi" (the page rounds 500Mi to 0.5Gi; exactly it is 29Gi - 500Mi)
    p = pool(cpu="16", memory="32Gi", kubelet=KubeletReservations(
        kube_reserved={"cpu": "1", "memory": "2Gi"}, system_reserved={"cpu": "500m", "memory": "1Gi"},
        eviction_hard={"memory.available": "500Mi"}))
    assert (p.allocatable.cpu_milli, p.allocatable.memory_bytes) == (14_500, 29 * GiB - 500 * 2**20)


def test_static_cpu_manager_without_reserved_cpu_is_refused():
    with pytest.raises(PropError, match=r"NodePool 'mixed': prop 'kubelet.cpu_manager_policy': 'static' needs reserved CPU > 0"):
        pool(kubelet=KubeletReservations(system_reserved={"memory": "4Gi"}, cpu_manager_policy="static"))


def test_kubelet_configuration_writes_every_eviction_signal():
    chart = cdk8s.Testing.chart()
    NodePool(chart, "pool", NodePoolProps(name="p", nodes=1, cpu="8", memory="32Gi",
                                          kubelet=KubeletReservations(eviction_hard={"memory.available": "1Gi"})))
    kubelet, join, _description = cdk8s.Testing.synth(chart)
    assert kubelet["kind"] == "KubeletConfiguration" and "metadata" not in kubelet
    assert set(kubelet["evictionHard"]) == {"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available"}
    assert kubelet["evictionHard"]["memory.available"] == "1Gi"
    assert join["nodeRegistration"]["kubeletExtraArgs"]["node-labels"] == "colocate.io/pool=p"


@pytest.mark.parametrize("gpus, policy, expected", [
    (2, "static", "best-effort"), (0, "static", None), (2, "none", None)])
def test_gpu_pools_with_exclusive_cores_align_them_with_gpus_best_effort(gpus, policy, expected):
    chart = cdk8s.Testing.chart()
    NodePool(chart, "pool", NodePoolProps(name="p", nodes=1, cpu="8", memory="32Gi", gpus=gpus, kubelet=KubeletReservations(
        system_reserved={"cpu": "1"}, cpu_manager_policy=policy)))
    kubelet = cdk8s.Testing.synth(chart)[0]
    assert kubelet.get("topologyManagerPolicy") == expected


def test_the_pool_selector_label_is_left_to_an_administrator():
    # NodeRestriction forbids kubelets to set node-restriction.kubernetes.io/ labels, and the
    # kubelet refuses them in --node-labels: the join carries every other label.
    chart = cdk8s.Testing.chart()
    pool = NodePool(chart, "pool", NodePoolProps(name="p", nodes=1, cpu="8", memory="32Gi", labels={"role": "p"}))
    _kubelet, join, description = cdk8s.Testing.synth(chart)
    assert "node-restriction.kubernetes.io" not in join["nodeRegistration"]["kubeletExtraArgs"]["node-labels"]
    assert description["spec"]["labels"]["node-restriction.kubernetes.io/colocate-pool"] == "p"
    assert pool.labels["node-restriction.kubernetes.io/colocate-pool"] == "p"


def test_join_configuration_carries_labels_and_taints():
    chart = cdk8s.Testing.chart()
    NodePool(chart, "pool", NodePoolProps(name="online", nodes=4, cpu="16", memory="64Gi", labels={"role": "online"},
                                          taints=(Taint("online", "true"),)))
    join = cdk8s.Testing.synth(chart)[1]
    assert join["nodeRegistration"]["taints"] == [{"key": "online", "value": "true", "effect": "NoSchedule"}]
    assert join["nodeRegistration"]["kubeletExtraArgs"]["node-labels"] == "colocate.io/pool=online,role=online"


@pytest.mark.parametrize("overrides, prop", [
    ({"nodes": 0}, "nodes"),
    ({"cpu": "lots"}, "cpu"),
    ({"name": "Mixed_Pool"}, "name"),
    ({"labels": {"node-role.kubernetes.io/worker": ""}}, "labels['node-role.kubernetes.io/worker']"),
    ({"taints": (Taint("online", "true", "Sometimes"),)}, "taints[0].effect"),
    ({"kubelet": KubeletReservations(system_reserved={"gpu": "1"})}, "kubelet.system_reserved['gpu']"),
    ({"kubelet": KubeletReservations(eviction_hard={"memory.free": "1Gi"})}, "kubelet.eviction_hard['memory.free']"),
    ({"kubelet": KubeletReservations(system_reserved={"cpu": "40"})}, "kubelet"),
])
def test_bad_props_are_refused_naming_the_prop(overrides, prop):
    with pytest.raises(PropError) as err:
        pool(**overrides)
    assert err.value.prop == prop


def test_a_pool_describes_itself_for_the_checker():
    chart = cdk8s.Testing.chart()
    NodePool(chart, "pool", NodePoolProps(name="p", nodes=3, cpu="8", memory="32Gi", gpus=1, labels={"role": "p"},
                                          kubelet=KubeletReservations(system_reserved={"cpu": "1", "memory": "2Gi"})))
    description = cdk8s.Testing.synth(chart)[2]
    assert description["kind"] == "NodePool" and description["metadata"] == {"name": "p"}
    assert description["spec"]["nodes"] == 3
    assert description["spec"]["allocatable"]["cpu"] == "7" and description["spec"]["allocatable"]["nvidia.com/gpu"] == "1"
    # The pool's labels, and those every kubelet sets on its Node (COL050 and simulate read them).
    assert description["spec"]["labels"] == {"colocate.io/pool": "p", "node-restriction.kubernetes.io/colocate-pool": "p",
                                             "role": "p", **KUBELET_NODE_LABELS}

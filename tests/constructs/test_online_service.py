from __future__ import annotations

import pytest
import cdk8s

from colocate.constructs.node_pool import NodePool
from colocate.model.pools import KubeletReservations, NodePoolProps, Taint
from colocate.constructs.online_service import OnlineService, OnlineServiceProps
from colocate.errors import PropError


ONLINE_TOLERATION = {"key": "online", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def synth(static: bool = True, pools: tuple[str, ...] = ("online",), **overrides) -> dict[str, dict]:
    chart = cdk8s.Testing.chart()
    kubelet = KubeletReservations(system_reserved={"cpu": "1", "memory": "2Gi"},
                                  cpu_manager_policy="static" if static else "none")
    known = {
        "online": NodePool(chart, "online", NodePoolProps(
            name="online", nodes=4, cpu="16", memory="64Gi", gpus=1, labels={"role": "online"},
            taints=(Taint("online", "true"),), kubelet=kubelet)),
        "mixed": NodePool(chart, "mixed", NodePoolProps(
            name="mixed", nodes=6, cpu="32", memory="128Gi", gpus=2, labels={"role": "mixed"}, kubelet=kubelet)),
        "small": NodePool(chart, "small", NodePoolProps(
            name="small", nodes=2, cpu="4", memory="16Gi", labels={"role": "small"},
            kubelet=KubeletReservations(system_reserved={"cpu": "1", "memory": "2Gi"}))),
    }
    props = dict(name="model", namespace="online", image="harbor.example.com/ml/model:1.0.0",
                 pools=[known[name] for name in pools], priority_class="online-high", cpu="4", memory="8Gi", port=8080)
    OnlineService(chart, "svc", OnlineServiceProps(**{**props, **overrides}))
    return {o["kind"]: o for o in cdk8s.Testing.synth(chart) if o["kind"] not in ("KubeletConfiguration", "JoinConfiguration")}


def test_pods_are_guaranteed_at_online_priority_on_the_online_pool():
    pod = synth()["Deployment"]["spec"]["template"]["spec"]
    resources = pod["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "4", "memory": "8Gi"}
    assert pod["priorityClassName"] == "online-high"
    assert pod["tolerations"] == [ONLINE_TOLERATION]
    assert pod["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "node-restriction.kubernetes.io/colocate-pool", "operator": "In", "values": ["online"]}]}]}}}


def test_several_pools_are_required_the_first_preferred_and_only_their_taints_tolerated():
    pod = synth(pools=("online", "mixed"))["Deployment"]["spec"]["template"]["spec"]
    affinity = pod["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "node-restriction.kubernetes.io/colocate-pool", "operator": "In", "values": ["mixed", "online"]}]}]
    assert affinity["preferredDuringSchedulingIgnoredDuringExecution"] == [{"weight": 100, "preference": {
        "matchExpressions": [{"key": "node-restriction.kubernetes.io/colocate-pool", "operator": "In", "values": ["online"]}]}}]
    # The mixed pool has no taint: nothing more to tolerate, and no wildcard.
    assert pod["tolerations"] == [ONLINE_TOLERATION]
    assert "nodeSelector" not in pod


def test_pdb_and_service_select_the_pods():
    objs = synth()
    selector = objs["Deployment"]["spec"]["selector"]["matchLabels"]
    assert objs["PodDisruptionBudget"]["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector}}
    assert objs["Service"]["spec"]["selector"] == selector


def test_fractional_cpu_is_fine_without_the_static_cpu_manager():
    assert synth(static=False, cpu="1500m")["Deployment"]


@pytest.mark.parametrize("overrides, prop, words", [
    ({"cpu": "1500m"}, "cpu", "static CPU manager"),
    ({"cpu": "32"}, "cpu/memory/gpus", "more than one node"),
    ({"gpus": 2}, "cpu/memory/gpus", "more than one node"),
    ({"max_unavailable": 0}, "max_unavailable", "block every node drain"),
    ({"image": "model:latest"}, "image", "pinned tag"),
    ({"port": 70000}, "port", "not a TCP port"),
    ({"pools": []}, "pools", "at least one pool"),
    ({"pre_stop_delay_seconds": 30}, "pre_stop_delay_seconds", "taken from"),
])
def test_bad_props_are_refused_naming_the_prop(overrides, prop, words):
    with pytest.raises(PropError) as err:
        synth(**overrides)
    assert err.value.prop == prop and words in str(err.value)


def test_a_pod_too_big_for_any_listed_pool_is_refused_naming_that_pool():
    with pytest.raises(PropError) as err:
        synth(pools=("online", "small"), cpu="8")
    assert err.value.prop == "cpu/memory/gpus" and "'small'" in str(err.value)


def test_a_static_cpu_pool_anywhere_in_the_list_needs_whole_cores():
    with pytest.raises(PropError) as err:
        synth(static=True, pools=("small", "online"), cpu="1500m", memory="2Gi")
    assert err.value.prop == "cpu" and "'online'" in str(err.value)


def test_an_slo_adds_a_service_monitor_that_declares_the_histogram():
    from colocate.model.slo import LatencySlo

    objs = synth(slo=LatencySlo(metric="http_request_duration_seconds", objective_seconds=0.005),
                 monitor_labels={"release": "kube-prometheus-stack"})
    monitor = objs["ServiceMonitor"]
    assert monitor["spec"]["selector"]["matchLabels"] == objs["Service"]["metadata"]["labels"]
    assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
    assert monitor["metadata"]["annotations"]["colocate.io/metrics"] == "http_request_duration_seconds:histogram"


def test_an_slo_without_monitor_labels_is_refused():
    from colocate.model.slo import LatencySlo

    with pytest.raises(PropError) as err:
        synth(slo=LatencySlo(metric="http_request_duration_seconds", objective_seconds=0.005))
    assert err.value.prop == "monitor_labels"


def test_the_pull_secret_goes_into_the_pod_template_and_must_be_a_secret_name():
    assert synth(image_pull_secret="harbor-pull")["Deployment"]["spec"]["template"]["spec"]["imagePullSecrets"] == [
        {"name": "harbor-pull"}]
    assert "imagePullSecrets" not in synth()["Deployment"]["spec"]["template"]["spec"]
    with pytest.raises(PropError) as err:
        synth(image_pull_secret="Harbor_Pull")
    assert err.value.prop == "image_pull_secret"


def test_replicas_spread_over_nodes_without_ever_staying_pending_for_it():
    pod = synth(pools=("online", "mixed"))["Deployment"]["spec"]["template"]["spec"]
    assert pod["topologySpreadConstraints"] == [{
        "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "model"}}}]


def test_a_stopping_pod_serves_through_the_pre_stop_delay_within_its_grace_period():
    container = synth()["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert container["lifecycle"] == {"preStop": {"exec": {"command": ["sleep", "5"]}}}
    assert "lifecycle" not in synth(pre_stop_delay_seconds=0)["Deployment"]["spec"]["template"]["spec"]["containers"][0]


def test_a_service_without_gpus_hides_the_nodes_gpus_and_one_with_gpus_does_not():
    env = synth()["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"} in env
    gpu = synth(gpus=1)["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert not [e for e in gpu.get("env", []) if e["name"] == "NVIDIA_VISIBLE_DEVICES"]

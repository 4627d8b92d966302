from __future__ import annotations

import pytest
import cdk8s

from colocate.constructs.node_pool import NodePool
from colocate.model.pools import KubeletReservations, NodePoolProps, Taint
from colocate.constructs.online_service import OnlineService, OnlineServiceProps
from colocate.errors import PropError


def synth(static: bool = True, **overrides) -> dict[str, dict]:
    chart = cdk8s.Testing.chart()
    pool = NodePool(chart, "pool", NodePoolProps(
        name="online", nodes=4, cpu="16", memory="64Gi", gpus=1, labels={"role": "online"}, taints=(Taint("online", "true"),),
        kubelet=KubeletReservations(system_reserved={"cpu": "1", "memory": "2Gi"},
                                    cpu_manager_policy="static" if static else "none")))
    props = dict(name="model", namespace="online", image="harbor.example.com/ml/model:1.0.0", pool=pool,
                 priority_class="online-high", cpu="4", memory="8Gi", port=8080)
    OnlineService(chart, "svc", OnlineServiceProps(**{**props, **overrides}))
    return {o["kind"]: o for o in cdk8s.Testing.synth(chart)}


def test_pods_are_guaranteed_at_online_priority_on_the_online_pool():
    pod = synth()["Deployment"]["spec"]["template"]["spec"]
    resources = pod["containers"][0]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "4", "memory": "8Gi"}
    assert pod["priorityClassName"] == "online-high"
    assert pod["tolerations"] == [{"key": "online", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    assert pod["nodeSelector"] == {"role": "online", "colocate.io/pool": "online"}


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
])
def test_bad_props_are_refused_naming_the_prop(overrides, prop, words):
    with pytest.raises(PropError) as err:
        synth(**overrides)
    assert err.value.prop == prop and words in str(err.value)

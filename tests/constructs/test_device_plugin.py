from __future__ import annotations

import pytest

from colocate import app, config as config_mod
from colocate.constructs.device_plugin import NvidiaDevicePlugin, NvidiaDevicePluginProps
from colocate.errors import PropError
from colocate.model.pools import Taint

ONLINE = Taint("online", "true", "NoSchedule")


def test_runs_on_every_gpu_pool_tolerating_its_taints_at_node_critical_priority():
    values = NvidiaDevicePlugin(NvidiaDevicePluginProps(gpu_pools=["online", "mixed"], taints=[ONLINE])).values()
    term = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0]["values"] == ["mixed", "online"]
    assert ONLINE.toleration() in values["tolerations"]
    assert values["priorityClassName"] == "system-node-critical"
    assert values["image"] == {"repository": "nvcr.io/nvidia/k8s-device-plugin", "tag": "v0.14.5"}


def test_passes_device_specs_so_gpus_survive_the_static_cpu_manager():
    values = NvidiaDevicePlugin(NvidiaDevicePluginProps(gpu_pools=["mixed"])).values()
    assert values["compatWithCPUManager"] is True


def test_no_gpu_pool_is_refused_with_the_switch_to_use():
    with pytest.raises(PropError, match="gpu.devicePlugin: false"):
        NvidiaDevicePlugin(NvidiaDevicePluginProps(gpu_pools=[]))


def test_the_switch_in_colocate_yaml_leaves_the_plugin_to_the_gpu_operator(tmp_path):
    from colocate.charts.gitops import ApplicationsChart

    def applications(config_path):
        built = app.build(config_mod.load(config_path))
        chart = next(c for c in built.charts if isinstance(c, ApplicationsChart))
        return {obj["metadata"]["name"] for obj in chart.to_json()}

    source = config_mod.default_path().read_text()
    off = tmp_path / "colocate.yaml"
    off.write_text(source.replace("devicePlugin: true", "devicePlugin: false"))
    assert "nvidia-device-plugin" in applications(config_mod.default_path())
    assert "nvidia-device-plugin" not in applications(off)

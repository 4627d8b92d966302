"""NvidiaDevicePlugin: values of NVIDIA's nvidia-device-plugin Helm chart 0.14.5.

Without the device plugin no node advertises ``nvidia.com/gpu`` and every GPU pod stays Pending.
Chart keys (NVIDIA/k8s-device-plugin ``deployments/helm/nvidia-device-plugin/values.yaml`` and
``templates/daemonset.yml`` at v0.14.5): ``affinity`` (none by default: the DaemonSet would try
every node), ``tolerations`` (default CriticalAddonsOnly and ``nvidia.com/gpu``, not our pool
taints), ``priorityClassName`` (default ``system-node-critical``), ``image.repository``/``tag``,
``runtimeClassName``. docs/gpus.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from colocate.errors import PropError
from colocate.model.names import NODE_CRITICAL
from colocate.model.pools import Taint
from colocate.model.scheduling import required_pool_affinity
from colocate.model.validate import check_dns_label, check_image

CHART = "nvidia-device-plugin"
CHART_VERSION = "0.14.5"
IMAGE = f"nvcr.io/nvidia/k8s-device-plugin:v{CHART_VERSION}"
#: The chart refuses the default namespace; kube-system holds node add-ons.
NAMESPACE = "kube-system"
#: How the plugin tells the runtime a container's GPUs: volume mounts, not the env var a pod can set.
DEVICE_LIST_STRATEGY = "volume-mounts"
#: Requests of the plugin's container (see values()).
RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}}


@dataclass(frozen=True)
class NvidiaDevicePluginProps:
    """Props of an NvidiaDevicePlugin."""

    #: Names of the pools with GPUs; the plugin runs on their nodes only. Required.
    gpu_pools: Sequence[str]
    #: Taints of those pools, which the plugin tolerates (the online pool's included).
    taints: Sequence[Taint] = ()
    #: Image, from the mirror. Default: the chart's, upstream.
    image: str = IMAGE
    #: Helm release name. Default ``nvidia-device-plugin``.
    release: str = CHART


class NvidiaDevicePlugin:
    """The chart's values for the GPU pools; Argo CD renders the chart."""

    def __init__(self, props: NvidiaDevicePluginProps):
        where = "NvidiaDevicePlugin"
        if not props.gpu_pools:
            raise PropError(where, "gpu_pools", "is empty: no pool has GPUs; set gpu.devicePlugin: false")
        for i, pool in enumerate(props.gpu_pools):
            check_dns_label(where, f"gpu_pools[{i}]", pool)
        check_dns_label(where, "release", props.release)
        check_image(where, "image", props.image, mirror_path=False)
        self.props = props

    def values(self) -> dict[str, Any]:
        p = self.props
        repository, _, tag = p.image.rpartition(":")
        tolerations = {(t.key, t.effect): t.toleration() for t in p.taints}
        return {
            "image": {"repository": repository, "tag": tag},
            "affinity": required_pool_affinity(p.gpu_pools),
            # The chart's two defaults, plus the taints of our GPU pools.
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                            *(tolerations[k] for k in sorted(tolerations))],
            "priorityClassName": NODE_CRITICAL,
            # The chart sets none (values.yaml resources: {}): without requests the plugin had
            # cpu.shares 2 beside bursting training (rule COL013). Our figures for a small gRPC
            # daemon; no memory limit, so it is never OOM-killed by its own cgroup.
            "resources": {k: dict(v) for k, v in RESOURCES.items()},
            # GPU pools run the static CPU manager with systemd cgroups: without PASS_DEVICE_SPECS a
            # cpuset update drops /dev/nvidia* from running containers ("Failed to initialize
            # NVML: Unknown Error"). The chart then runs the plugin privileged (docs/gpus.md).
            "compatWithCPUManager": True,
            # GPUs reach a container as volume mounts the runtime alone reads; with the nodes'
            # accept-nvidia-visible-devices-envvar-when-unprivileged = false, no pod's
            # NVIDIA_VISIBLE_DEVICES can widen or create them (README "DEVICE_LIST_STRATEGY" at
            # v0.14.5; docs/gpus.md, "Defence in depth").
            "deviceListStrategy": DEVICE_LIST_STRATEGY,
        }

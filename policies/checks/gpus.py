"""Python checks for the GPU rules: what a container on a GPU node can see of the node's GPUs.
Each takes the Index and its Rule and yields Violations; metadata, message and fix live in
policies/rules/<id>.yaml.
"""
from __future__ import annotations

from typing import Any, Iterator

from colocate.checker import Index, Rule, Violation
from colocate.model.pods import ALL, containers
from colocate.model.names import GPU, NO_GPU_VALUES, VISIBLE_DEVICES_ENV

#: The workload tiers whose pods we judge: platform add-ons (device plugin, DCGM exporter) read
#: the GPUs on purpose and are not ours to change.
_TIERS = ("online", "offline")


def gpu_quantity(container: dict[str, Any], kind: str) -> Any:
    """The container's ``nvidia.com/gpu`` under ``resources.<kind>`` (requests or limits), None if unset."""
    return ((container.get("resources") or {}).get(kind) or {}).get(GPU)


def _requests_gpu(container: dict[str, Any]) -> bool:
    return any(gpu_quantity(container, kind) is not None for kind in ("limits", "requests"))


def _visible_devices(container: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(index, entry) of each NVIDIA_VISIBLE_DEVICES entry of the container's env."""
    return [(i, entry) for i, entry in enumerate(container.get("env") or [])
            if isinstance(entry, dict) and entry.get("name") == VISIBLE_DEVICES_ENV]


def gpu_less_containers_hide_gpus(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every container of a pod a GPU pool admits leaves GPU visibility to the device plugin: one
    without a GPU request sets NVIDIA_VISIBLE_DEVICES to void (or none), its image's own value (all,
    in CUDA images) would expose every GPU; none sets it to anything else, nor from valueFrom,
    because the kubelet appends the pod's env after the plugin's and the last value wins."""
    gpu_pools = [p for p in index.ctx.pools if p.allocatable.gpus]
    for tier in _TIERS:
        for pod in index.pods(tier):
            pools = [p.name for p in gpu_pools if p.admits(pod.spec)]
            if not pools:
                continue
            for path, container in containers(pod, ALL):
                name, entries = container.get("name"), _visible_devices(container)
                for i, entry in entries:
                    if "valueFrom" in entry:
                        yield Violation(pod.doc, f"{path}.env[{i}].valueFrom", f"{VISIBLE_DEVICES_ENV} of container "
                                        f"{name!r} comes from valueFrom, which no review can read")
                    elif entry.get("value") not in NO_GPU_VALUES:
                        yield Violation(pod.doc, f"{path}.env[{i}].value", f"{VISIBLE_DEVICES_ENV}="
                                        f"{entry.get('value')!r} on container {name!r}, which "
                                        + ("overrides the GPUs the device plugin gave it" if _requests_gpu(container)
                                           else f"requests no {GPU}"))
                if not entries and not _requests_gpu(container):
                    yield Violation(pod.doc, f"{path}.env", f"container {name!r} requests no {GPU} but may run "
                                    f"on GPU pool {', '.join(pools)} without {VISIBLE_DEVICES_ENV}")


#: The device plugin's chart and image (NVIDIA/k8s-device-plugin v0.14.5).
_PLUGIN_CHART = "nvidia-device-plugin"
_PLUGIN_IMAGE = "k8s-device-plugin"


def _pass_device_specs(container: dict[str, Any]) -> bool:
    return any(isinstance(e, dict) and e.get("name") == "PASS_DEVICE_SPECS" and str(e.get("value")).lower() == "true"
               for e in container.get("env") or [])


def device_plugin_passes_device_specs(index: Index, rule: Rule) -> Iterator[Violation]:
    """Where a GPU pool runs the static CPU manager, the device plugin passes device specs: the
    chart's compatWithCPUManager in an Application, PASS_DEVICE_SPECS=true in a workload."""
    static = sorted(p.name for p in index.ctx.pools if p.allocatable.gpus and p.static_cpu)
    if not static:
        return
    pools = ", ".join(static)
    for doc in index.of_kind("Application"):
        source = (doc.obj.get("spec") or {}).get("source") or {}
        if source.get("chart") != _PLUGIN_CHART:
            continue
        values = (source.get("helm") or {}).get("valuesObject") or {}
        if values.get("compatWithCPUManager") is not True:
            yield Violation(doc, "spec.source.helm.valuesObject.compatWithCPUManager",
                            f"{values.get('compatWithCPUManager')!r}, while GPU pool {pools} runs the static CPU manager")
    for pod in index.pods():
        for path, container in containers(pod):
            image = str(container.get("image") or "")
            if _PLUGIN_IMAGE in image.rsplit("/", 1)[-1] and not _pass_device_specs(container):
                yield Violation(pod.doc, f"{path}.env", f"{image} without PASS_DEVICE_SPECS=true, while GPU pool "
                                f"{pools} runs the static CPU manager")

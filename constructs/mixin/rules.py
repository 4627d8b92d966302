"""Recording rules of the colocation mixin. None reads another recording rule, so each can be
backfilled on its own (``promtool tsdb create-blocks-from rules`` does not chain them)."""
from __future__ import annotations

from typing import Any

from colocate.constructs.mixin.config import Selectors, eq, ne, re_, sel

#: DCGM reports framebuffer memory in MiB.
_MIB = 1024 * 1024


class RecordingRules(Selectors):
    @property
    def recording_rules(self) -> list[dict[str, Any]]:
        ksm = self._ksm
        node_requests = sel("kube_pod_container_resource_requests", ksm, re_("resource", "cpu|memory|nvidia_com_gpu"),
                             ne("node"))
        requests = f"sum by (node, resource) ({node_requests} * on (namespace, pod) group_left () {self._active_pods})"
        pod_info = sel("kube_pod_info", ksm, ne("node"))
        pod_requests = (f'sum by (node, namespace, pod, resource) ({sel("kube_pod_container_resource_requests", ksm, re_("resource", "cpu|memory"), ne("node"))})'
                        f" * on (namespace, pod) group_left () {self._active_pods}"
                        f" * on (namespace, pod) group_left (priority_class) max by (namespace, pod, priority_class) ({pod_info})")
        pool_requests = f"sum by (pool, priority_class, resource) ({pod_requests} * on (node) group_left (pool) {self._node_pool})"
        pool_allocatable = f'sum by (pool, resource) ({self._allocatable("cpu|memory")} * on (node) group_left (pool) {self._node_pool})'
        cpu_alloc = sel("kube_node_status_allocatable", ksm, eq("resource", "cpu"))
        mem_alloc = sel("kube_node_status_allocatable", ksm, eq("resource", "memory"))
        return [
            {"record": "node:node_cpu_utilisation:rate5m", "expr": self.node_cpu_utilisation},
            {"record": "node_resource:kube_pod_container_resource_requests:ratio",
             "expr": f'{requests} / on (node, resource) {self._allocatable("cpu|memory|nvidia_com_gpu")}'},
            {"record": "node:container_cpu_usage_seconds:ratio_rate5m",
             "expr": f'sum by (node) (rate({sel("container_cpu_usage_seconds_total", self._cadvisor)}[5m]))'
                     f" / on (node) max by (node) ({cpu_alloc})"},
            {"record": "node:container_memory_working_set_bytes:ratio",
             "expr": f'sum by (node) ({sel("container_memory_working_set_bytes", self._cadvisor)})'
                     f" / on (node) max by (node) ({mem_alloc})"},
            {"record": "node_gpu:dcgm_gpu_utilisation:percent",
             "expr": self._per_gpu(sel("DCGM_FI_DEV_GPU_UTIL", self._dcgm))},
            # DCGM reports framebuffer memory in MiB.
            {"record": "node_gpu:dcgm_fb_used:bytes",
             "expr": f'{self._per_gpu(sel("DCGM_FI_DEV_FB_USED", self._dcgm))} * {_MIB}'},
            {"record": "pool_priority_class:kube_pod_container_resource_requests:ratio",
             "expr": f"{pool_requests} / on (pool, resource) group_left () {pool_allocatable}"},
        ]


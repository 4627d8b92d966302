"""Recording rules of the colocation mixin. None reads another recording rule, so each can be
backfilled on its own (``promtool tsdb create-blocks-from rules`` does not chain them)."""
from __future__ import annotations

from typing import Any

from colocate.mixin.config import eq, ne, re_, sel
from colocate.mixin.slo import LatencyGuard
from colocate.mixin import records

#: DCGM reports framebuffer memory in MiB.
_MIB = 1024 * 1024


def recording_rules(guard: LatencyGuard) -> list[dict[str, Any]]:
    ksm = guard.ksm
    node_requests = sel("kube_pod_container_resource_requests", ksm, re_("resource", "cpu|memory|nvidia_com_gpu"),
                         ne("node"))
    requests = f"sum by (node, resource) ({node_requests} * on (namespace, pod) group_left () {guard.active_pods})"
    pod_info = sel("kube_pod_info", ksm, ne("node"))
    pod_requests = ('sum by (node, namespace, pod, resource) '
                    f'({sel("kube_pod_container_resource_requests", ksm, re_("resource", "cpu|memory|nvidia_com_gpu"), ne("node"))})'
                    f" * on (namespace, pod) group_left () {guard.active_pods}"
                    f" * on (namespace, pod) group_left (priority_class) max by (namespace, pod, priority_class) ({pod_info})")
    pool_requests = f"sum by (pool, priority_class, resource) ({pod_requests} * on (node) group_left (pool) {guard.node_pool})"
    cpu_used = f'sum by (node, namespace, pod) (rate({sel("container_cpu_usage_seconds_total", guard.cadvisor)}[5m]))'
    memory_used = f'sum by (node, namespace, pod) ({sel("container_memory_working_set_bytes", guard.cadvisor)})'
    # A GPU handed to a pod carries that pod's namespace/pod (the exporter's honorLabels).
    gpu_busy = (f'label_replace({sel("DCGM_FI_DEV_GPU_UTIL", guard.dcgm)}, "node", "$1", "Hostname", "(.*)") / 100')
    cpu_alloc = sel("kube_node_status_allocatable", ksm, eq("resource", "cpu"))
    mem_alloc = sel("kube_node_status_allocatable", ksm, eq("resource", "memory"))
    return [
        {"record": records.NODE_CPU_UTILISATION, "expr": guard.node_cpu_utilisation},
        {"record": records.NODE_REQUESTS,
         "expr": f'{requests} / on (node, resource) {guard.allocatable("cpu|memory|nvidia_com_gpu")}'},
        {"record": records.NODE_CPU_USED,
         "expr": f'sum by (node) (rate({sel("container_cpu_usage_seconds_total", guard.cadvisor)}[5m]))'
                 f" / on (node) max by (node) ({cpu_alloc})"},
        {"record": records.NODE_MEMORY_USED,
         "expr": f'sum by (node) ({sel("container_memory_working_set_bytes", guard.cadvisor)})'
                 f" / on (node) max by (node) ({mem_alloc})"},
        {"record": records.GPU_UTILISATION,
         "expr": guard.per_gpu(sel("DCGM_FI_DEV_GPU_UTIL", guard.dcgm))},
        # DCGM reports framebuffer memory in MiB.
        {"record": records.GPU_MEMORY_USED,
         "expr": f'{guard.per_gpu(sel("DCGM_FI_DEV_FB_USED", guard.dcgm))} * {_MIB}'},
        {"record": records.POOL_REQUESTS,
         "expr": f"{pool_requests} / on (pool, resource) group_left () {guard.pool_allocatable('cpu|memory|nvidia_com_gpu')}"},
        # What pods really use, per pool and PriorityClass, over the pool's allocatable.
        {"record": records.POOL_CPU_USED,
         "expr": f"{guard.by_pool_and_class(cpu_used)} / on (pool) group_left () {guard.pool_allocatable('cpu')}"},
        {"record": records.POOL_MEMORY_USED,
         "expr": f"{guard.by_pool_and_class(memory_used)} / on (pool) group_left () {guard.pool_allocatable('memory')}"},
        {"record": records.POOL_GPU_USED,
         "expr": f"{guard.by_pool_and_class(gpu_busy)} / on (pool) group_left () {guard.pool_allocatable('nvidia_com_gpu')}"},
        # Contention the co-located training causes on a node (node-exporter; PSI needs kernel >= 4.20).
        {"record": records.NODE_CPU_STEAL,
         "expr": guard.node_exporter_rate("avg", "node_cpu_seconds_total", eq("mode", "steal"))},
        {"record": records.NODE_CPU_PRESSURE,
         "expr": guard.node_exporter_rate("max", "node_pressure_cpu_waiting_seconds_total")},
        *guard.latency_recording_rules,
    ]


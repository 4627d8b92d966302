"""The names of the mixin's recording rules, written once: the rules (rules.py) record them, the
dashboards and `colocate report` (report/headline.py) query them. Prometheus' naming convention:
level:metric:operations (prometheus.io docs/practices/rules)."""

NODE_CPU_UTILISATION = "node:node_cpu_utilisation:rate5m"
NODE_REQUESTS = "node_resource:kube_pod_container_resource_requests:ratio"
NODE_CPU_USED = "node:container_cpu_usage_seconds:ratio_rate5m"
NODE_MEMORY_USED = "node:container_memory_working_set_bytes:ratio"
GPU_UTILISATION = "node_gpu:dcgm_gpu_utilisation:percent"
GPU_MEMORY_USED = "node_gpu:dcgm_fb_used:bytes"
POOL_REQUESTS = "pool_priority_class:kube_pod_container_resource_requests:ratio"
POOL_CPU_USED = "pool_priority_class:container_cpu_usage_seconds:ratio_rate5m"
POOL_MEMORY_USED = "pool_priority_class:container_memory_working_set_bytes:ratio"
POOL_GPU_USED = "pool_priority_class:dcgm_gpu_utilisation:ratio"
NODE_CPU_STEAL = "node:node_cpu_steal:ratio_rate5m"
NODE_CPU_PRESSURE = "node:node_pressure_cpu_waiting:ratio_rate5m"

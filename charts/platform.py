"""The platform Application: priority tiers, namespaces and their fences, Prometheus RBAC."""
from __future__ import annotations

from typing import Sequence

from constructs import Construct

from colocate.model.cluster import Cluster
from colocate.config import Config
from colocate.charts._base import ColocateChart
from colocate.charts.upstream import Rendered
from colocate.constructs import device_plugin as plugin
from colocate.synth.vendor_render import HelmSource
from colocate.rules import admission
from colocate.rules.files import read_rules
from colocate.constructs.admission_policies import AdmissionPolicies
from colocate.constructs.namespace import Namespace, NamespaceProps
from colocate.constructs.node_pool import NodePool
from colocate.constructs.priority_tiers import PriorityTiers
from colocate.constructs.tenant_namespace import LimitRangeProps, TenantNamespace, TenantNamespaceProps
from colocate.model import quantity
from colocate.model.names import GPU
from colocate.model.pools import Resources

def pool_totals(pools: Sequence[NodePool]) -> dict[str, str]:
    """The pools' allocatable summed, by resource name (``cpu``, ``memory``, ``nvidia.com/gpu``
    when they have GPUs): what the training namespace's quota and Kueue's ClusterQueue both hold."""
    total = sum((pool.total_allocatable for pool in pools), Resources(0, 0, 0))
    totals = {"cpu": quantity.format_cpu(total.cpu_milli), "memory": quantity.format_bytes(total.memory_bytes)}
    if total.gpus:
        totals[GPU] = str(total.gpus)
    return totals


def pool_quota(pools: Sequence[NodePool], *, limits_memory: bool) -> dict[str, str]:
    """A ResourceQuota that lets a namespace fill exactly the pools' allocatable."""
    quota = {f"requests.{name}": value for name, value in pool_totals(pools).items()}
    if limits_memory:
        quota["limits.memory"] = quota["requests.memory"]
    return quota


def node_ceiling(pools: Sequence[NodePool]) -> dict[str, str]:
    """Largest container a node of any of the pools can hold."""
    return {"cpu": quantity.format_cpu(max(p.allocatable.cpu_milli for p in pools)),
            "memory": quantity.format_bytes(max(p.allocatable.memory_bytes for p in pools))}


class PlatformChart(ColocateChart):
    """Cluster-scoped and namespace-fencing objects every other Application relies on."""

    sync_wave = -10

    def __init__(self, scope: Construct, cluster: Cluster, config: Config, pools: dict[str, NodePool]):
        super().__init__(scope, "platform", folder="apps/platform")
        gpu_pools = [p for p in pools.values() if p.props.gpus > 0]
        self.device_plugin = plugin.NvidiaDevicePlugin(plugin.NvidiaDevicePluginProps(
            gpu_pools=[p.name for p in gpu_pools], taints=[t for p in gpu_pools for t in p.props.taints],
            image=self.mirrored(config, plugin.IMAGE),
        )) if config.device_plugin and gpu_pools else None
        self.tiers = PriorityTiers(self, "tiers", cluster.tiers)
        # Training fills the mixed pool; online services may fill every pool they run on.
        mixed, online = [pools[cluster.mixed_pool]], [pools[name] for name in cluster.online_placement]
        self.training = TenantNamespace(self, "training", TenantNamespaceProps(
            name=cluster.training_namespace, tier="offline", registry_cidrs=config.registry_cidrs,
            # Offline pods may burst CPU above requests, but memory is not compressible: the
            # defaults keep memory request == limit.
            quota={**pool_quota(mixed, limits_memory=True), "persistentvolumeclaims": str(cluster.training_claims)},
            limit_range=LimitRangeProps(default_request={"cpu": "1", "memory": "2Gi"},
                                        default_limit={"cpu": "2", "memory": "2Gi"},
                                        max=node_ceiling(mixed)),
            ingress_from_namespaces=(cluster.monitoring_namespace,),
        ))
        self.online = TenantNamespace(self, "online", TenantNamespaceProps(
            name=cluster.online_namespace, tier="online", registry_cidrs=config.registry_cidrs,
            quota=pool_quota(online, limits_memory=True),
            # Defaults equal, so a container that sets nothing is still Guaranteed.
            limit_range=LimitRangeProps(default_request={"cpu": "1", "memory": "2Gi"},
                                        default_limit={"cpu": "1", "memory": "2Gi"},
                                        max=node_ceiling(online)),
            ingress_from_namespaces=(cluster.monitoring_namespace,),
            ingress_ports_from_anywhere=tuple(s.port for s in cluster.online_services),
        ))
        # Node exporter (host network, host PID) and the DCGM exporter (SYS_ADMIN) need the
        # privileged level; the operator's pods pass baseline.
        # Kueue's manager passes restricted but for its seccomp profile; baseline, like the operator's.
        system = [(cluster.kueue_namespace, "baseline")] if config.queue else []
        for name, level in ((cluster.monitoring_namespace, "privileged"), (cluster.kubeflow_namespace, "baseline"), *system):
            Namespace(self, f"namespace-{name}", NamespaceProps(name=name, enforce=level))
        # The rules that judge an object alone, enforced by the API server too (opt-in: 1.28
        # needs a feature gate, which dist/control-plane/ then sets; docs/admission.md).
        self.admission = AdmissionPolicies(self, "admission", read_rules(), admission.values(cluster, config),
                                           admission.platform_namespaces(cluster, config), config.admission_actions) \
            if config.admission_policies else None

    def rendered(self, config: Config) -> list[Rendered]:
        """The NVIDIA device plugin, rendered from its vendored chart, unless colocate.yaml leaves
        it to the GPU operator; it syncs right after the platform, before any GPU pod."""
        if not self.device_plugin:
            return []
        release = self.device_plugin.props.release
        return [Rendered(release, release, HelmSource(plugin.CHART, release, plugin.NAMESPACE, self.device_plugin.values()),
                         version=plugin.CHART_VERSION, wave=self.sync_wave + 1, destination_namespace=plugin.NAMESPACE,
                         sync_options=("PruneLast=true",))]

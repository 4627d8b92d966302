"""The cluster's shape: node pools, priority tiers, namespaces, online services.

colocate.yaml's ``cluster:`` section says it (cluster_yaml.load builds a Cluster from it); the
repository's colocate.yaml, which ``colocate init`` writes, holds the reference cluster. A cdk8s
app of one's own may build a Cluster in Python instead.
"""
from __future__ import annotations

from dataclasses import dataclass

from colocate.errors import PropError
from colocate.model.pools import NodePoolProps, Taint
from colocate.model.slo import LatencySlo
from colocate.model.tiers import PriorityTier


@dataclass(frozen=True)
class OnlineServiceSpec:
    """An online service of the cluster; the chart adds pool, tier and namespace."""

    name: str
    image: str
    cpu: str
    memory: str
    port: int
    replicas: int = 2
    #: Replicas at the day's peak (an autoscaler or an operator scales to them). Default: replicas.
    peak_replicas: int | None = None
    gpus: int = 0
    #: Latency SLO; the mixin guards it while training shares the service's nodes. Default: none.
    slo: LatencySlo | None = None


@dataclass(frozen=True)
class Cluster:
    """Everything the charts need to know about the cluster, each fact once."""

    pools: tuple[NodePoolProps, ...]
    tiers: tuple[PriorityTier, ...]
    #: Pool names by role.
    online_pool: str
    mixed_pool: str
    monitoring_pool: str
    online_namespace: str
    training_namespace: str
    monitoring_namespace: str
    kubeflow_namespace: str
    #: Helm release name of kube-prometheus-stack; names its objects and the ``release``
    #: label Prometheus selects ServiceMonitors and PrometheusRules by.
    prometheus_release: str
    online_services: tuple[OnlineServiceSpec, ...]
    #: Pools online services may run on, preferred first: the dedicated online pool, then the
    #: mixed pool, where they take capacity from training (preemption) when online is full.
    online_service_pools: tuple[str, ...] = ()
    #: Namespace of the training-image pre-pull DaemonSet: its pods run at the background
    #: tier, which the offline namespace's priority rule would refuse.
    prepull_namespace: str = "image-prepull"
    #: Namespace of what colocate itself runs in the cluster: the resubmitter (and its Lease)
    #: and the schedule's CronJobs (docs/training-control.md).
    control_namespace: str = "colocate-system"
    #: PersistentVolumeClaims the training namespace's quota allows: each job has one, its
    #: checkpoints' (constructs/tfjob.py), so this bounds the jobs the namespace holds.
    training_claims: int = 100
    #: Kueue's ClusterQueue for training, and the LocalQueue of that name in the training
    #: namespace that every job names (docs/queue.md).
    training_queue: str = "training"
    #: Where Kueue's manager runs (the platform Application owns the Namespace).
    kueue_namespace: str = "kueue-system"

    def __post_init__(self) -> None:
        names = [p.name for p in self.pools]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise PropError("Cluster", f"pools[{twice[0]!r}]", "is named by more than one pool; each pool is one "
                            "node group with its own files in dist/nodes/, so give each a name of its own")
        for prop, value in (("online_pool", self.online_pool), ("mixed_pool", self.mixed_pool),
                            ("monitoring_pool", self.monitoring_pool),
                            *((f"online_service_pools[{i}]", n) for i, n in enumerate(self.online_service_pools))):
            if value not in names:
                raise PropError("Cluster", prop, f"{value!r} is not a pool (pools: {', '.join(names)})")

    @property
    def online_taint(self) -> Taint:
        """The taint that keeps everything but online pods off the online pool."""
        return self._only_taint(self.online_pool)

    @property
    def monitoring_taint(self) -> Taint:
        """Taint of the monitoring pool; only the monitoring stack tolerates it."""
        return self._only_taint(self.monitoring_pool)

    def _only_taint(self, pool_name: str) -> Taint:
        taints = self.pool(pool_name).taints
        if len(taints) != 1:
            raise PropError("Cluster", f"pools[{pool_name!r}].taints", f"needs exactly one taint, has {len(taints)}")
        return taints[0]

    @property
    def online_placement(self) -> tuple[str, ...]:
        """``online_service_pools``, or the online pool alone when that is empty."""
        return self.online_service_pools or (self.online_pool,)

    @property
    def monitor_labels(self) -> dict[str, str]:
        """Labels our ServiceMonitors and PrometheusRules need to be picked up."""
        return {"release": self.prometheus_release}

    def pool(self, name: str) -> NodePoolProps:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise PropError("Cluster", "pools", f"no pool is named {name!r} (pools: {', '.join(p.name for p in self.pools)})")

    def tier(self, role: str) -> PriorityTier:
        for tier in self.tiers:
            if tier.role == role:
                return tier
        raise PropError("Cluster", "tiers", f"no tier has role {role!r}")

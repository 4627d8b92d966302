"""The online Application: the cluster's online services."""
from __future__ import annotations

from constructs import Construct

from colocate.model.cluster import Cluster
from colocate.config import Config
from colocate.charts._base import ColocateChart
from colocate.constructs.node_pool import NodePool
from colocate.constructs.online_service import OnlineService, OnlineServiceProps


class OnlineChart(ColocateChart):
    """Every online service at the online tier, on the online pool first, then the mixed pool."""

    sync_wave = 10
    # Online services grow at peak (an autoscaler or an operator scales them). With selfHeal, Argo
    # CD would put replicas back to git's figure at once: `colocate simulate --scenario peak` showed
    # it with the real controller. So replicas are the cluster's, and a sync keeps them
    # (argo-cd v2.10.15 docs/user-guide/sync-options.md "Respect ignore difference configs").
    sync_options = ("PruneLast=true", "RespectIgnoreDifferences=true")
    ignore_differences = ({"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]},)

    def __init__(self, scope: Construct, cluster: Cluster, config: Config, pools: dict[str, NodePool]):
        super().__init__(scope, "online", folder="apps/online")
        for spec in cluster.online_services:
            OnlineService(self, spec.name, OnlineServiceProps(
                name=spec.name, namespace=cluster.online_namespace, image=spec.image,
                pools=[pools[name] for name in cluster.online_placement], priority_class=cluster.tier("online").name,
                cpu=spec.cpu, memory=spec.memory, gpus=spec.gpus, port=spec.port, replicas=spec.replicas, peak_replicas=spec.peak_replicas,
                slo=spec.slo, monitor_labels=cluster.monitor_labels,
                image_pull_secret=config.registry_pull_secret,
            ))

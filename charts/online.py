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

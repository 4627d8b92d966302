"""Node provisioning files, one folder per pool; Argo CD never applies them."""
from __future__ import annotations

from constructs import Construct

from colocate.charts._base import ColocateChart
from colocate.constructs.node_pool import NodePool
from colocate.model.pools import NodePoolProps


class NodePoolChart(ColocateChart):
    """``dist/nodes/<pool>/``: the pool's JoinConfiguration and KubeletConfiguration patch."""

    def __init__(self, scope: Construct, props: NodePoolProps):
        # kubelet/kubeadm files are not API objects: no metadata, so no labels.
        super().__init__(scope, f"nodes-{props.name}", folder=f"nodes/{props.name}", labels=False)
        self.pool = NodePool(self, "pool", props)

"""Control-plane provisioning files (``dist/control-plane/``); Argo CD never applies them."""
from __future__ import annotations

from constructs import Construct

from colocate.charts._base import ColocateChart
from colocate.constructs.control_plane import ControlPlane


class ControlPlaneChart(ColocateChart):
    """The kubeadm ClusterConfiguration and KubeProxyConfiguration settings colocate relies on."""

    def __init__(self, scope: Construct):
        # kubeadm files are not API objects: no metadata, so no labels.
        super().__init__(scope, "control-plane", folder="control-plane", labels=False)
        self.control_plane = ControlPlane(self, "control-plane")

"""Control-plane provisioning files (``dist/control-plane/``); Argo CD never applies them."""
from __future__ import annotations

from constructs import Construct

from colocate.charts._base import ColocateChart
from colocate.rules.admission import API_SERVER_FLAGS, CONTROLLER_MANAGER_FLAGS
from colocate.constructs.control_plane import ControlPlane, ControlPlaneProps


class ControlPlaneChart(ColocateChart):
    """The kubeadm ClusterConfiguration and KubeProxyConfiguration settings colocate relies on."""

    def __init__(self, scope: Construct, admission_policies: bool = False):
        # kubeadm files are not API objects: no metadata, so no labels.
        super().__init__(scope, "control-plane", folder="control-plane", labels=False)
        self.control_plane = ControlPlane(self, "control-plane", ControlPlaneProps(
            api_server_args=API_SERVER_FLAGS if admission_policies else {},
            controller_manager_args=CONTROLLER_MANAGER_FLAGS if admission_policies else {}))

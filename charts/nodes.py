"""Node provisioning files, one folder per pool; Argo CD never applies them."""
from __future__ import annotations

from typing import Iterable

from constructs import Construct

from colocate.charts._base import ColocateChart
from colocate.config import Config
from colocate.errors import InputError, PropError
from colocate.base.layout import pool_folder
from colocate.constructs.containerd_config import ContainerdConfig, ContainerdConfigProps
from colocate.constructs.node_pool import GPU_TOOLKIT_CONFIG, GPU_TOOLKIT_FILE, GPU_UDEV_RULE, GPU_UDEV_RULE_FILE, NodePool
from colocate.model.pools import PAUSE_IMAGE, NodePoolProps


class NodePoolChart(ColocateChart):
    """``dist/nodes/<pool>/``: the pool's JoinConfiguration and KubeletConfiguration patch, and
    (``add_containerd``) the containerd files under ``containerd/``."""

    def __init__(self, scope: Construct, props: NodePoolProps):
        # kubelet/kubeadm files are not API objects: no metadata, so no labels.
        super().__init__(scope, f"nodes-{props.name}", folder=pool_folder(props.name), labels=False)
        self.pool = NodePool(self, "pool", props)
        if props.gpus:
            self.extra_files[GPU_UDEV_RULE_FILE] = GPU_UDEV_RULE
            self.extra_files[GPU_TOOLKIT_FILE] = GPU_TOOLKIT_CONFIG

    def add_containerd(self, config: Config, upstream_images: Iterable[str]) -> None:
        """The registry mirror for every upstream image the cluster deploys (known once every
        other chart is built), and the sandbox image."""
        sandbox = self.mirrored(config, PAUSE_IMAGE)
        try:
            containerd = ContainerdConfig(self, "containerd", ContainerdConfigProps(
                registry_host=config.registry_host, proxy_projects=config.registry_proxy_projects,
                upstream_images=tuple(sorted({*upstream_images, *self.upstream_images})),
                sandbox_image=sandbox, ca_file=config.registry_ca_file,
            ))
        except PropError as exc:
            if exc.prop != "proxy_projects":
                raise
            # The projects come from the configuration: name its file and key, not a Python prop.
            raise InputError(config.file, "$.registry.proxyCacheProjects", exc.reason) from None
        self.extra_files.update({f"containerd/{path}": text for path, text in containerd.files.items()})

"""NodePool: emits what node provisioning needs for one pool (not what Argo CD applies).

A kubeadm JoinConfiguration carrying the pool's labels and taints, and a KubeletConfiguration
to drop into the node's kubeadm patches directory. The pool itself (capacity, reservations,
allocatable, validation) is plain data in colocate.model.pools.
"""
from __future__ import annotations

from constructs import Construct

from colocate.model import quantity
from colocate.constructs._k8s import emit
from colocate.model import pool_facts
from colocate.model.pools import PATCHES_DIR, NodePoolProps, Resources

#: Where the GPU pools' udev rule goes, and the rule: it links every NVIDIA device node under
#: /dev/char when the driver loads, so that runc finds them when systemd re-applies a
#: container's device cgroup (NVIDIA/nvidia-docker#1671, #1730; the command is
#: nvidia-container-toolkit v1.14.6 cmd/nvidia-ctk/system/create-dev-char-symlinks).
GPU_UDEV_RULE_FILE = "udev/71-nvidia-dev-char.rules"
#: Topology manager policy of GPU pools with the static CPU manager (kubelet default: none).
TOPOLOGY_MANAGER_POLICY = "best-effort"
GPU_UDEV_RULE = (
    "# Copy to /lib/udev/rules.d/71-nvidia-dev-char.rules on GPU nodes (docs/gpus.md).\n"
    'ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", '
    'RUN+="/usr/bin/nvidia-ctk system create-dev-char-symlinks --create-all"\n'
)


#: Where the GPU pools' NVIDIA Container Toolkit settings go, and the settings: the runtime takes
#: an unprivileged container's GPUs from the device plugin's volume mounts only, never from its
#: NVIDIA_VISIBLE_DEVICES, which any pod can set (docs/gpus.md, "Defence in depth"). Top-level
#: keys of /etc/nvidia-container-runtime/config.toml (toolkit v1.14.6 internal/config/config.go);
#: every key the file lacks keeps the toolkit's default (internal/config/toml.go, Config).
GPU_TOOLKIT_FILE = "nvidia-container-runtime/config.toml"
GPU_TOOLKIT_SETTINGS = {
    "accept-nvidia-visible-devices-envvar-when-unprivileged": False,
    "accept-nvidia-visible-devices-as-volume-mounts": True,
}
GPU_TOOLKIT_CONFIG = (
    "# Top-level keys of /etc/nvidia-container-runtime/config.toml on GPU nodes, before any table\n"
    "# (docs/gpus.md, \"Defence in depth\"; docs/node-pools.md). The device plugin passes GPUs as\n"
    "# volume mounts (deviceListStrategy: volume-mounts); a pod's NVIDIA_VISIBLE_DEVICES is ignored\n"
    "# unless the container is privileged (CAP_SYS_ADMIN).\n"
    + "".join(f"{key} = {str(value).lower()}\n" for key, value in GPU_TOOLKIT_SETTINGS.items())
)


class NodePool(Construct):
    """A node pool: validates its props and emits its provisioning files."""

    def __init__(self, scope: Construct, id: str, props: NodePoolProps):
        super().__init__(scope, id)
        props.validate()
        self.props = props
        self.labels: dict[str, str] = props.node_labels
        self.capacity = props.capacity
        self.allocatable = props.allocatable
        emit(self, "kubelet", self._kubelet_configuration())
        emit(self, "join", self._join_configuration())
        # What `colocate check` knows of the pool (capacity rules), read back from dist/.
        emit(self, "description", pool_facts.describe(props))

    @property
    def name(self) -> str:
        return self.props.name

    @property
    def static_cpu(self) -> bool:
        return self.props.static_cpu

    @property
    def total_allocatable(self) -> Resources:
        return self.props.total_allocatable

    def tolerations(self) -> list[dict]:
        """Tolerations a pod needs to run on this pool."""
        return self.props.tolerations()

    def _kubelet_configuration(self) -> dict:
        k = self.props.kubelet
        out = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "cpuManagerPolicy": k.cpu_manager_policy,
            "enforceNodeAllocatable": ["pods"],
            "evictionHard": k.eviction(),
        }
        if self.props.gpus and k.cpu_manager_policy == "static":
            # Exclusive cores and GPUs from the same NUMA node when the node can give them, never
            # a refusal: restricted and single-numa-node reject a pod they cannot align
            # (TopologyAffinityError), and online pods must always start (docs/gpus.md).
            out["topologyManagerPolicy"] = TOPOLOGY_MANAGER_POLICY
        for key, reserved in (("systemReserved", k.system_reserved), ("kubeReserved", k.kube_reserved)):
            if reserved:
                out[key] = {r: quantity.canonical(v, "cpu" if r == "cpu" else "memory" if r != "pid" else "count")
                            for r, v in reserved.items()}
        return out

    def _join_configuration(self) -> dict:
        # Not the selector label: the kubelet refuses node-restriction.kubernetes.io/ labels.
        node_labels = ",".join(f"{k}={v}" for k, v in sorted(self.props.kubelet_labels.items()))
        return {
            "apiVersion": "kubeadm.k8s.io/v1beta3",
            "kind": "JoinConfiguration",
            # The provisioner drops the discovery kubeconfig (with its bootstrap token) on the
            # node, so no credential is ever written to git.
            "discovery": {"file": {"kubeConfigPath": "/etc/kubernetes/discovery.conf"}},
            "nodeRegistration": {
                "kubeletExtraArgs": {"node-labels": node_labels},
                "taints": [t.to_kube() for t in self.props.taints],
            },
            # The pool's kubeletconfiguration.yaml goes here as KUBELET_PATCH_FILE.
            "patches": {"directory": PATCHES_DIR},
        }

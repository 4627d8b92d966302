"""Node pools: a group of identical nodes, their labels, taints, capacity and kubelet reservations.

Plain values, no cdk8s: the generator (constructs/node_pool.py), the checker and the
simulation read the same pool. ``NodePoolProps.validate()`` refuses what the kubelet refuses;
``allocatable`` is what the scheduler sees per node (docs/node-pools.md).
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property
from types import MappingProxyType
from typing import Any, Callable, Literal, Mapping, Sequence

from colocate.model import quantity
from colocate.errors import PropError
from colocate.model.names import GPU, POOL_LABEL, POOL_SELECTOR_LABEL
from colocate.model.validate import check_dns_label, check_labels

#: Where kubeadm reads patches on a node (JoinConfiguration ``patches.directory``, and
#: ``kubeadm upgrade node --patches``), and the file name that patches the kubelet's config:
#: target ``kubeletconfiguration``, patch type ``strategic`` (docs/node-pools.md).
PATCHES_DIR = "/etc/kubernetes/patches"
KUBELET_PATCH_FILE = "kubeletconfiguration+strategic.yaml"
#: The upgrade command that re-applies them (docs/node-pools.md quotes it; a test checks).
UPGRADE_COMMAND = f"kubeadm upgrade node --patches {PATCHES_DIR}"

#: The pod sandbox image kubeadm 1.28 expects (kubernetes/kubernetes v1.28.15
#: cmd/kubeadm/app/constants/constants.go PauseVersion "3.9"); containerd 1.7's own default is
#: pause:3.8 (pkg/cri/config/config_unix.go), so the nodes' containerd config names it.
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
#: containerd's registry host directory (CRI ``registry.config_path``), one folder per registry
#: with its hosts.toml, and the drop-in the node's config.toml imports (docs/node-pools.md).
CONTAINERD_CERTS_DIR = "/etc/containerd/certs.d"
CONTAINERD_DROP_IN = "/etc/containerd/conf.d/colocate.toml"

#: Every hard-eviction signal, with the kubelet's defaults except memory. Setting any signal
#: makes the unspecified ones 0 on Kubernetes 1.28 (kubelet config types.go), so all four are
#: always written.
DEFAULT_EVICTION_HARD = MappingProxyType({
    "memory.available": "500Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
})
_EVICTION_SIGNALS = frozenset(DEFAULT_EVICTION_HARD)
_RESERVABLE = frozenset({"cpu", "memory", "ephemeral-storage", "pid"})
# Keys the kubelet refuses in --node-labels (cmd/kubelet/app/options/options.go): any
# kubernetes.io / k8s.io key outside these allowed prefixes makes the kubelet fail to start.
_ALLOWED_K8S_LABEL_PREFIXES = ("kubelet.kubernetes.io/", "node.kubernetes.io/")
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True)
class Taint:
    """A node taint. ``effect`` is NoSchedule, PreferNoSchedule or NoExecute."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def to_kube(self) -> dict:
        out = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        return out

    def toleration(self) -> dict:
        """The toleration that lets a pod onto nodes with this taint."""
        out = {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}
        return out if self.value else {"key": self.key, "operator": "Exists", "effect": self.effect}


@dataclass(frozen=True)
class KubeletReservations:
    """Resources the kubelet keeps from pods, and its CPU manager policy.

    @see https://kubernetes.io/docs/tasks/administer-cluster/reserve-compute-resources/
    """

    #: For the OS and its daemons, e.g. ``{"cpu": "500m", "memory": "4Gi"}``. Default: none.
    system_reserved: Mapping[str, str] = field(default_factory=dict)
    #: For the kubelet and container runtime. Default: none.
    kube_reserved: Mapping[str, str] = field(default_factory=dict)
    #: Hard eviction thresholds; signals left out keep DEFAULT_EVICTION_HARD's value.
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    #: ``static`` gives Guaranteed pods with integer CPU exclusive cores. Default ``none``.
    cpu_manager_policy: Literal["none", "static"] = "none"

    def eviction(self) -> dict[str, str]:
        return {**DEFAULT_EVICTION_HARD, **self.eviction_hard}


@dataclass(frozen=True)
class Resources:
    """CPU in millicores, memory in bytes, whole GPUs."""

    cpu_milli: int
    memory_bytes: int
    gpus: int = 0

    def __str__(self) -> str:
        text = f"cpu {quantity.format_cpu(self.cpu_milli)}, memory {quantity.format_bytes(self.memory_bytes)}"
        return text + (f", {GPU} {self.gpus}" if self.gpus else "")

    def __add__(self, other: "Resources") -> "Resources":
        return Resources(self.cpu_milli + other.cpu_milli, self.memory_bytes + other.memory_bytes,
                         self.gpus + other.gpus)

    def times(self, n: int) -> "Resources":
        return Resources(n * self.cpu_milli, n * self.memory_bytes, n * self.gpus)

    def fits(self, other: "Resources") -> bool:
        """True when ``other`` fits inside these resources."""
        return (other.cpu_milli <= self.cpu_milli and other.memory_bytes <= self.memory_bytes
                and other.gpus <= self.gpus)

    def by_name(self) -> tuple[tuple[str, int], ...]:
        """(resource name, amount) of each, in name order."""
        return ("cpu", self.cpu_milli), ("memory", self.memory_bytes), (GPU, self.gpus)


@dataclass(frozen=True)
class NodePoolProps:
    """Props of a NodePool."""

    #: Pool name, a DNS label; also the value of the ``colocate.io/pool`` node label.
    name: str
    #: Number of nodes.
    nodes: int
    #: Per-node CPU capacity, e.g. ``"32"``.
    cpu: str
    #: Per-node memory capacity, e.g. ``"128Gi"``.
    memory: str
    #: NVIDIA GPUs per node. Default 0.
    gpus: int = 0
    #: Node labels, besides ``colocate.io/pool`` which is always set.
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Node taints. Default: none (any pod may land).
    taints: Sequence[Taint] = ()
    #: Kubelet reservations and CPU manager policy. Default: nothing reserved, policy none.
    kubelet: KubeletReservations = field(default_factory=KubeletReservations)

    @property
    def node_labels(self) -> dict[str, str]:
        """Every label the pool's nodes carry: ``labels`` plus both pool labels."""
        return {**self.kubelet_labels, POOL_SELECTOR_LABEL: self.name}

    @property
    def kubelet_labels(self) -> dict[str, str]:
        """The labels the kubelet sets at join (``--node-labels``): all but the selector label,
        which only an administrator may set (docs/node-pools.md)."""
        return {**self.labels, POOL_LABEL: self.name}

    @property
    def static_cpu(self) -> bool:
        """True when the kubelet pins cores (static CPU manager policy)."""
        return self.kubelet.cpu_manager_policy == "static"

    @property
    def capacity(self) -> Resources:
        """Per-node capacity."""
        return Resources(quantity.millicores(self.cpu), quantity.to_bytes(self.memory), self.gpus)

    @cached_property
    def allocatable(self) -> Resources:
        """Per-node allocatable: capacity minus system and kube reservations (CPU, memory) and
        the memory.available hard-eviction threshold, as the kubelet computes it."""
        return self._allocatable()

    @property
    def total_allocatable(self) -> Resources:
        return self.allocatable.times(self.nodes)

    def tolerations(self) -> list[dict]:
        """Tolerations a pod needs to run on this pool."""
        return [taint.toleration() for taint in self.taints]

    def _where(self) -> str:
        return f"NodePool {self.name!r}"

    def validate(self) -> None:
        """Raise PropError (naming the prop) for what the kubelet or kubeadm would refuse."""
        p, where = self, self._where()
        check_dns_label(where, "name", p.name)
        if not isinstance(p.nodes, int) or p.nodes < 1:
            raise PropError(where, "nodes", f"{p.nodes!r} must be a whole number >= 1")
        if not isinstance(p.gpus, int) or p.gpus < 0:
            raise PropError(where, "gpus", f"{p.gpus!r} must be a whole number >= 0")
        for prop in ("cpu", "memory"):
            value = getattr(p, prop)
            if not quantity.is_quantity(value) or quantity.parse(value) <= 0:
                raise PropError(where, prop, f"{value!r} must be a positive quantity such as '32' or '128Gi'")
        check_labels(where, "labels", p.labels)
        for key in p.labels:
            prefix = key.rpartition("/")[0]
            if (prefix.endswith("kubernetes.io") or prefix.endswith("k8s.io")) and \
                    not key.startswith(_ALLOWED_K8S_LABEL_PREFIXES):
                raise PropError(where, f"labels[{key!r}]", "the kubelet refuses --node-labels in the "
                                "kubernetes.io and k8s.io namespaces (it fails to start); use your own prefix")
        seen = set()
        for i, taint in enumerate(p.taints):
            if taint.effect not in _TAINT_EFFECTS:
                raise PropError(where, f"taints[{i}].effect", f"{taint.effect!r} must be one of {', '.join(_TAINT_EFFECTS)}")
            check_labels(where, f"taints[{i}]", {taint.key: taint.value})
            if (taint.key, taint.effect) in seen:
                raise PropError(where, f"taints[{i}]", f"taint {taint.key}:{taint.effect} is listed twice")
            seen.add((taint.key, taint.effect))
        k = p.kubelet
        if k.cpu_manager_policy not in ("none", "static"):
            raise PropError(where, "kubelet.cpu_manager_policy", f"{k.cpu_manager_policy!r} must be 'none' or 'static'")
        for prop in ("system_reserved", "kube_reserved"):
            for resource, value in getattr(k, prop).items():
                if resource not in _RESERVABLE:
                    raise PropError(where, f"kubelet.{prop}[{resource!r}]", f"must be one of {sorted(_RESERVABLE)}")
                if not quantity.is_quantity(value) or quantity.parse(value) < 0:
                    raise PropError(where, f"kubelet.{prop}[{resource!r}]", f"{value!r} is not a quantity")
        for signal, value in k.eviction_hard.items():
            if signal not in _EVICTION_SIGNALS:
                raise PropError(where, f"kubelet.eviction_hard[{signal!r}]", f"must be one of {sorted(_EVICTION_SIGNALS)}")
            if not (str(value).endswith("%") or quantity.is_quantity(value)):
                raise PropError(where, f"kubelet.eviction_hard[{signal!r}]", f"{value!r} is neither a quantity nor a percentage")
        reserved_cpu = sum(quantity.millicores(r.get("cpu", "0")) for r in (k.system_reserved, k.kube_reserved))
        if k.cpu_manager_policy == "static" and reserved_cpu == 0:
            raise PropError(where, "kubelet.cpu_manager_policy", "'static' needs reserved CPU > 0 (the kubelet "
                            "refuses to start without it); set kubelet.system_reserved['cpu'] or kube_reserved['cpu']")

    def _allocatable(self) -> Resources:
        k, cap = self.kubelet, self.capacity
        cpu = cap.cpu_milli - sum(quantity.millicores(r.get("cpu", "0")) for r in (k.system_reserved, k.kube_reserved))
        memory_threshold = k.eviction()["memory.available"]
        eviction = (cap.memory_bytes * int(memory_threshold[:-1]) // 100 if memory_threshold.endswith("%")
                    else quantity.to_bytes(memory_threshold))
        memory = cap.memory_bytes - eviction - sum(
            quantity.to_bytes(r.get("memory", "0")) for r in (k.system_reserved, k.kube_reserved))
        if cpu <= 0 or memory <= 0:
            raise PropError(self._where(), "kubelet", f"reservations leave no allocatable resources "
                            f"(cpu {cpu}m, memory {memory} bytes of capacity {cap})")
        return Resources(cpu, memory, cap.gpus)


# --- The pool's fields, one list (CONTRIBUTING.md "Recipe: add a pool field") -------------------

def _text(values: Mapping[str, Any]) -> dict[str, str]:
    """Quantities as the model keeps them: YAML reads ``cpu: 16`` as a number."""
    return {k: str(v) for k, v in values.items()}


def _taints(values: Sequence[Mapping[str, Any]]) -> tuple[Taint, ...]:
    return tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in values)


_JSON_TYPES = ("integer", "number", "string", "object", "array", "boolean")


@dataclass(frozen=True)
class PoolField:
    """One field of a node pool, as each of its homes spells it. colocate/model/cluster_yaml.py reads
    colocate.yaml by this list and pool_facts.describe() writes the NodePool description by it; tests
    (tests/model/test_pool_fields.py) fail when the model, colocate.yaml's schema or the NodePool
    schema disagree with it."""

    #: The NodePoolProps attribute; ``kubelet.<name>`` for one of its KubeletReservations.
    attr: str
    #: Its key in a ``cluster.pools[]`` entry of colocate.yaml; ``kubelet.<key>`` below ``kubelet:``.
    key: str
    #: Its type there: a JSON Schema type, a ``$defs`` name of config.schema.json, or the allowed values.
    type: str | tuple[str, ...]
    #: What it means (the schema's description says the same).
    description: str
    #: A value colocate.yaml may give it, other than the default (the tests build a pool of them).
    example: Any
    #: The NodePool description's spec keys it shows in; a key describe() does not compute from
    #: several fields (pool_facts.DERIVED) carries the field's value as it is. (): not described.
    described: tuple[str, ...] = ()
    #: colocate.yaml's value (already schema-checked) as the model keeps it.
    read: Callable[[Any], Any] = lambda value: value
    #: JSON Schema keywords the property has besides its type and description (bounds, items, ...).
    constraints: Mapping[str, Any] = field(default_factory=dict)

    def of(self, pool: "NodePoolProps") -> Any:
        """The field's value in ``pool``."""
        value: Any = pool
        for part in self.attr.split("."):
            value = getattr(value, part)
        return value

    def default(self) -> Any:
        """The model's default for the field; ``dataclasses.MISSING`` when it has none (required)."""
        owner, name = (KubeletReservations, self.attr.removeprefix("kubelet.")) if self.attr.startswith("kubelet.") \
            else (NodePoolProps, self.attr)
        found = next(f for f in fields(owner) if f.name == name)
        return found.default_factory() if found.default_factory is not MISSING else found.default

    def has_default(self) -> bool:
        return self.default() is not MISSING

    def schema(self) -> dict[str, Any]:
        """The property of colocate.yaml's ``cluster.pools[]`` entry."""
        if isinstance(self.type, tuple):
            typed: dict[str, Any] = {"enum": list(self.type)}
        elif self.type in _JSON_TYPES:
            typed = {"type": self.type}
        else:
            typed = {"$ref": f"#/$defs/{self.type}"}
        return {**typed, **self.constraints, "description": self.description}


POOL_FIELDS: tuple[PoolField, ...] = (
    PoolField("name", "name", "dnsLabel", "pool name; also the colocate.io/pool node label", "gpu-a"),
    PoolField("nodes", "nodes", "integer", "number of nodes", 3, ("nodes",), constraints={
        "minimum": 1, "errorMessage": {"minimum": "is not a node count: a pool has at least one node"}}),
    PoolField("cpu", "cpu", "quantity", "CPU capacity of one node", 16, ("capacity", "allocatable"), str),
    PoolField("memory", "memory", "quantity", "memory capacity of one node", "64Gi", ("capacity", "allocatable"), str),
    PoolField("gpus", "gpus", "integer", "NVIDIA GPUs per node", 2, ("capacity", "allocatable"),
              constraints={"minimum": 0, "default": 0}),
    PoolField("labels", "labels", "object", "node labels besides colocate.io/pool", {"role": "gpu"}, ("labels",), dict,
              constraints={"additionalProperties": {"type": "string"}}),
    PoolField("taints", "taints", "array", "node taints; none: any pod may land",
              [{"key": "gpu", "value": "true", "effect": "NoSchedule"}], ("taints",), _taints,
              constraints={"items": {"$ref": "#/$defs/taint"}}),
    PoolField("kubelet.system_reserved", "kubelet.systemReserved", "resources", "kept for the OS and its daemons",
              {"cpu": "500m", "memory": "2Gi"}, ("allocatable",), _text),
    PoolField("kubelet.kube_reserved", "kubelet.kubeReserved", "resources",
              "kept for the kubelet and the container runtime", {"cpu": "500m"}, ("allocatable",), _text),
    PoolField("kubelet.eviction_hard", "kubelet.evictionHard", "object", "hard eviction thresholds; signals left "
              "out keep the kubelet's defaults (memory.available 500Mi)", {"memory.available": "1Gi"},
              ("allocatable",), _text, constraints={"additionalProperties": {"type": "string"}, "propertyNames": {
                  "enum": ["memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available"]}}),
    PoolField("kubelet.cpu_manager_policy", "kubelet.cpuManagerPolicy", ("none", "static"),
              "static gives Guaranteed pods with integer CPU exclusive cores", "static", ("cpuManagerPolicy",),
              constraints={"default": "none"}),
)


def pool_schema() -> dict[str, Any]:
    """colocate.yaml's ``cluster.pools[]`` entry as JSON Schema: the properties and required keys of
    POOL_FIELDS (config.schema.json's ``$defs.pool`` is filled from it), ``kubelet.*`` in one object."""
    kubelet = {f.key.removeprefix("kubelet."): f.schema() for f in POOL_FIELDS if f.key.startswith("kubelet.")}
    properties = {f.key: f.schema() for f in POOL_FIELDS if not f.key.startswith("kubelet.")}
    properties["kubelet"] = {"type": "object", "additionalProperties": False, "properties": kubelet}
    return {"type": "object", "additionalProperties": False,
            "required": [f.key for f in POOL_FIELDS if not f.has_default()], "properties": properties}


def pool_from_fields(values: Mapping[str, Any]) -> NodePoolProps:
    """A NodePoolProps from values by PoolField.attr; absent ones keep the model's default."""
    kubelet = {attr.removeprefix("kubelet."): v for attr, v in values.items() if attr.startswith("kubelet.")}
    return NodePoolProps(**{attr: v for attr, v in values.items() if not attr.startswith("kubelet.")},
                         kubelet=KubeletReservations(**kubelet))

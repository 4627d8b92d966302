"""Node configuration checks: the KubeletConfiguration and kubeadm JoinConfiguration files a node
pool boots from, judged as the kubelet v1.28.15 would (docs/node-pools.md names the sources)."""
from __future__ import annotations

from decimal import Decimal
from pathlib import PurePath
from typing import Any, Iterator

from colocate.model import quantity
from colocate.checker import Index, Rule, Violation
from colocate.checker.manifests import Doc
from colocate.model.names import POOL_LABEL

KUBELET_GROUP, KUBEADM_GROUP = "kubelet.config.k8s.io", "kubeadm.k8s.io"
#: pkg/kubelet/eviction/defaults_linux.go DefaultEvictionHard: applied only when evictionHard is
#: absent (cmd/kubelet/app/server.go loadConfigFile), so a map that sets some keys drops the rest.
DEFAULT_EVICTION_HARD = {"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
                         "imagefs.available": "15%"}


def _kubelet_configs(index: Index) -> Iterator[Doc]:
    return (d for d in index.of_kind("KubeletConfiguration") if d.group == KUBELET_GROUP)


def _join_configs(index: Index) -> Iterator[Doc]:
    return (d for d in index.of_kind("JoinConfiguration") if d.group == KUBEADM_GROUP)


def _cpu_count(cpuset: Any) -> int:
    """CPUs in a cpuset list such as ``0-1,6``."""
    count = 0
    for part in str(cpuset or "").split(","):
        first, dash, last = part.strip().partition("-")
        if first.isdigit():
            count += int(last) - int(first) + 1 if dash and last.isdigit() else 1
    return count


def _reserved(config: dict[str, Any], resource: str) -> Decimal:
    total = Decimal(0)
    for key in ("kubeReserved", "systemReserved"):
        value = (config.get(key) or {}).get(resource) if isinstance(config.get(key), dict) else None
        if value is not None:
            try:
                total += quantity.parse(value)
            except (TypeError, ValueError, ArithmeticError):
                pass
    return total


def static_cpu_reserved(index: Index, rule: Rule) -> Iterator[Violation]:
    """pkg/kubelet/cm/cpumanager/cpu_manager.go NewManager: the static policy refuses to start
    with systemReserved.cpu + kubeReserved.cpu zero (reservedSystemCPUs replaces both)."""
    for doc in _kubelet_configs(index):
        if doc.obj.get("cpuManagerPolicy") != "static" or _cpu_count(doc.obj.get("reservedSystemCPUs")):
            continue
        if _reserved(doc.obj, "cpu") <= 0:
            yield Violation(doc, "cpuManagerPolicy", "static with no kubeReserved.cpu, systemReserved.cpu "
                                                     "or reservedSystemCPUs")


def _node_labels(join: Doc) -> tuple[str, str]:
    """(field, value) of the node-labels kubelet flag: a map in kubeadm v1beta3, a list of
    name/value pairs in v1beta4."""
    args = (join.obj.get("nodeRegistration") or {}).get("kubeletExtraArgs")
    if isinstance(args, dict) and "node-labels" in args:
        return "nodeRegistration.kubeletExtraArgs.node-labels", str(args["node-labels"])
    if isinstance(args, list):
        for i, arg in enumerate(args):
            if isinstance(arg, dict) and arg.get("name") == "node-labels":
                return f"nodeRegistration.kubeletExtraArgs[{i}].value", str(arg.get("value", ""))
    return "", ""


def _labels(value: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in value.split(",") if item.strip())
    return {k.strip(): v.strip() for k, _, v in pairs}


#: k8s.io/kubelet pkg/apis/well_known_labels.go: the kubernetes.io/k8s.io labels a kubelet may set.
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch"})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _refused(key: str) -> bool:
    """cmd/kubelet/app/options/options.go ValidateKubeletFlags: a kubernetes.io or k8s.io label
    that IsKubeletLabel does not allow."""
    namespace = key.partition("/")[0] if "/" in key else ""
    kubernetes = any(namespace == n or namespace.endswith("." + n) for n in ("kubernetes.io", "k8s.io"))
    allowed = key in KUBELET_LABELS or any(namespace == n or namespace.endswith("." + n)
                                           for n in KUBELET_LABEL_NAMESPACES)
    return kubernetes and not allowed


def kubelet_node_labels(index: Index, rule: Rule) -> Iterator[Violation]:
    for doc in _join_configs(index):
        field, value = _node_labels(doc)
        refused = sorted(k for k in _labels(value) if _refused(k))
        if refused:
            yield Violation(doc, field, ", ".join(refused))


def eviction_defaults(index: Index, rule: Rule) -> Iterator[Violation]:
    for doc in _kubelet_configs(index):
        eviction = doc.obj.get("evictionHard")
        if not isinstance(eviction, dict):
            continue
        missing = [k for k in DEFAULT_EVICTION_HARD if k not in eviction]
        if missing:
            yield Violation(doc, "evictionHard", "no threshold for " + ", ".join(
                f"{k} (default {DEFAULT_EVICTION_HARD[k]})" for k in missing))


def _pool_of(kubelet: Doc, joins: list[Doc]) -> str:
    """The pool whose nodes boot from this file: the pool label of the JoinConfiguration beside it."""
    folder = PurePath(kubelet.file).parent
    for join in joins:
        if PurePath(join.file).parent == folder:
            pool = _labels(_node_labels(join)[1]).get(POOL_LABEL)
            if pool:
                return pool
    return ""


def _eviction_memory(config: dict[str, Any], capacity: int) -> Decimal:
    eviction = config.get("evictionHard")
    value = (eviction if isinstance(eviction, dict) else DEFAULT_EVICTION_HARD).get("memory.available")
    if value is None:
        return Decimal(0)
    text = str(value)
    try:
        return Decimal(text[:-1]) / 100 * capacity if text.endswith("%") else quantity.parse(text)
    except (TypeError, ValueError, ArithmeticError):
        return Decimal(0)


def reservations_below_capacity(index: Index, rule: Rule) -> Iterator[Violation]:
    """pkg/kubelet/cm/node_container_manager_linux.go validateNodeAllocatable: kube and system
    reservations plus the hard-eviction threshold must fit the node's capacity."""
    pools = {p.name: p for p in index.ctx.cluster.pools}
    joins = list(_join_configs(index))
    for doc in _kubelet_configs(index):
        pool = pools.get(_pool_of(doc, joins))
        if pool is None:
            continue
        capacity = pool.capacity
        cpu = Decimal(_cpu_count(doc.obj.get("reservedSystemCPUs"))) or _reserved(doc.obj, "cpu")
        memory = _reserved(doc.obj, "memory") + _eviction_memory(doc.obj, capacity.memory_bytes)
        if cpu * 1000 >= capacity.cpu_milli:
            yield Violation(doc, "systemReserved.cpu", f"{cpu} CPUs reserved, pool {pool.name} nodes have "
                                                       f"{quantity.format_cpu(capacity.cpu_milli)}")
        if memory >= capacity.memory_bytes:
            yield Violation(doc, "systemReserved.memory", f"{quantity.format_bytes(int(memory))} reserved with the "
                            f"eviction threshold, pool {pool.name} nodes have {quantity.format_bytes(capacity.memory_bytes)}")

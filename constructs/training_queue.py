"""TrainingQueue: Kueue's queue for training (kueue.x-k8s.io/v1beta1), from the cluster model.

One ResourceFlavor per pool training may use (its node labels, so Kueue pins an admitted job's
pods to the pool it was counted against), one ClusterQueue whose nominal quota is what those
pools hold, a LocalQueue in each training namespace, and a WorkloadPriorityClass per training
tier. Kueue admits a job only when all its pods fit the quota, and orders the rest by priority,
then creation time (docs/queue.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from constructs import Construct

from colocate.constructs._k8s import emit
from colocate.errors import PropError
from colocate.model.names import KUEUE_API, SYNC_OPTIONS
from colocate.model.tiers import PriorityTier


@dataclass(frozen=True)
class FlavorProps:
    """A pool training may use, as Kueue counts it."""

    #: ResourceFlavor name (the pool's name).
    name: str
    #: Labels every node of the pool carries; Kueue adds them to an admitted job's nodeSelector.
    node_labels: Mapping[str, str]
    #: The pool's total allocatable by resource name (``cpu``, ``memory``, ``nvidia.com/gpu``).
    quota: Mapping[str, str]


@dataclass(frozen=True)
class TrainingQueueProps:
    #: ClusterQueue name; the LocalQueues are named the same.
    name: str
    #: Namespaces whose jobs the queue admits (one LocalQueue each).
    namespaces: Sequence[str]
    flavors: Sequence[FlavorProps]
    #: The training tiers: a WorkloadPriorityClass each, of the tier's value.
    tiers: Sequence[PriorityTier]


#: The CRDs come from the Kueue Application: the first sync's dry run would fail without them.
_CRD_ELSEWHERE = {SYNC_OPTIONS: "SkipDryRunOnMissingResource=true"}


class TrainingQueue(Construct):
    def __init__(self, scope: Construct, id: str, props: TrainingQueueProps):
        super().__init__(scope, id)
        self.props = props
        if not props.flavors:
            raise PropError("TrainingQueue", "flavors", "needs at least one pool: a queue with no flavor admits nothing")
        resources = sorted(set().union(*(f.quota for f in props.flavors)))
        for flavor in props.flavors:
            missing = [r for r in resources if r not in flavor.quota]
            if missing:
                raise PropError("TrainingQueue", f"flavors[{flavor.name!r}].quota",
                                f"lacks {', '.join(missing)}: every flavor of one resource group covers the same resources")
            emit(self, f"flavor-{flavor.name}", {
                "apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": flavor.name, "annotations": dict(_CRD_ELSEWHERE)},
                "spec": {"nodeLabels": dict(flavor.node_labels)}})
        emit(self, "cluster-queue", {
            "apiVersion": KUEUE_API, "kind": "ClusterQueue",
            "metadata": {"name": props.name, "annotations": dict(_CRD_ELSEWHERE)},
            "spec": {
                # Only the training namespaces' jobs are counted against the training pools.
                "namespaceSelector": {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": sorted(props.namespaces)}]},
                # Priority first, then creation time; a job that does not fit lets smaller ones pass.
                "queueingStrategy": "BestEffortFIFO",
                "resourceGroups": [{"coveredResources": resources, "flavors": [
                    {"name": f.name, "resources": [{"name": r, "nominalQuota": f.quota[r]} for r in resources]}
                    for f in props.flavors]}],
            }})
        for ns in sorted(props.namespaces):
            emit(self, f"local-queue-{ns}", {
                "apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": props.name, "namespace": ns, "annotations": dict(_CRD_ELSEWHERE)},
                "spec": {"clusterQueue": props.name}})
        for tier in props.tiers:
            emit(self, f"priority-{tier.name}", {
                "apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass",
                "metadata": {"name": tier.name, "annotations": dict(_CRD_ELSEWHERE)},
                "value": tier.value, "description": tier.description})

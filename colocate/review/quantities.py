"""The quantities ``capacity`` and ``diff`` count, read before counting: a container's CPU, memory
and GPU limits and requests (colocate/model/pods.py), the hard limits of a ResourceQuota that
model/resource_quota.py counts, the nominal quotas of a ClusterQueue that model/kueue_admission.py counts, and the replica counts
they are multiplied by. One that is no Kubernetes quantity (NaN, Inf, a list, a boolean, digits
other than ASCII), that is negative, or that is past what Kubernetes counts is bad input naming
the file, the object and the field, never a crash, a count taken silently as the default, or
minutes of arithmetic on a million-digit number."""
from __future__ import annotations

from decimal import Decimal
from typing import Iterable, Iterator

from colocate.checker import manifests
from colocate.checker.manifests import Doc
from colocate.errors import InputError
from colocate.model import kueue_admission, pods, quantity, resource_quota
from colocate.review import queue
from colocate.model.names import GPU
from colocate.model.pods import containers

#: A container's resources that pod_resources counts, and their unit.
COUNTED = {"cpu": "cpu", "memory": "memory", GPU: "count"}
#: Units in which each is counted (millicores, bytes, devices), at most int64: the scheduler and
#: the quota controller count in int64 (k8s.io/apimachinery v0.28.15 pkg/api/resource/quantity.go,
#: Value and MilliValue).
_PER_BASE_UNIT = {"cpu": 1000, "memory": 1, "count": 1}
_MOST = Decimal(2**63 - 1)


def check(docs: Iterable[Doc]) -> None:
    """Raise InputError(file, field, why) for the first quantity capacity cannot count."""
    for doc in docs:
        if doc.kind == "TFJob":
            queue.expected_hours(doc)
        for field, value, unit in _quantities(doc):
            why = _unusable(value, unit)
            if why:
                shown = repr(value)
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                raise InputError(doc.file, field, f"{doc.ref}: {shown} {why}: capacity cannot count it")
        for field, value in pods.replica_counts(doc):
            if value is not None and not _whole_count(value):
                shown = f"{value:g}" if isinstance(value, float) else repr(value)[:60]
                raise InputError(doc.file, field, f"{doc.ref}: {shown} is not a replica count from 0 to "
                                 f"{pods.INT32_MAX} (the API server refuses it): capacity cannot count it")


def _whole_count(value: object) -> bool:
    """A count the API server takes (int32, not negative); an integral float is one, as go-yaml reads it."""
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return whole and not isinstance(value, bool) and 0 <= value <= pods.INT32_MAX  # type: ignore[operator]


def _unusable(value: object, unit: str) -> str:
    try:
        amount = quantity.parse(value)  # type: ignore[arg-type]
    except ValueError:
        return "is not a Kubernetes quantity (e.g. 500m, 2, 4Gi; ASCII digits, no NaN or Inf)"
    if amount < 0:
        return "is negative (the API server refuses it)"
    try:
        too_much = amount * _PER_BASE_UNIT[unit] > _MOST
    except ArithmeticError:  # past Decimal's exponent range
        too_much = True
    return "is more than Kubernetes counts (int64)" if too_much else ""


def _quantities(doc: Doc) -> Iterator[tuple[str, object, str]]:
    """(field path, value, unit) of every quantity of ``doc`` that capacity counts; a field of
    another shape counts as absent there, as in pod_resources (the schema check reports it)."""
    for pod in manifests.pod_specs(doc):
        for path, container in containers(pod):
            resources = container.get("resources")
            for which in ("limits", "requests"):
                values = resources.get(which) if isinstance(resources, dict) else None
                for key, unit in COUNTED.items() if isinstance(values, dict) else ():
                    if key in values:
                        yield f"{path}.resources.{which}.{key}", values[key], unit
    if doc.kind == "ResourceQuota":
        for key, value in resource_quota.hard_limits(doc.obj).items():
            if resource_quota.counted(key):
                yield f"spec.hard.{key}", value, resource_quota.unit(key)
    if doc.kind == "ClusterQueue":
        for field, resource, value in kueue_admission.nominal_quotas(doc.obj):
            if resource in COUNTED:
                yield field, value, COUNTED[resource]

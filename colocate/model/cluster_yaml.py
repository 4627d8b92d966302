"""The ``cluster:`` section of colocate.yaml, already checked against its JSON Schema, as a
:class:`Cluster`. What a schema cannot say (names that must be unique or name a pool, the props
the constructs refuse) is refused here, as bad input naming the file and the key."""
from __future__ import annotations

from typing import Callable, Mapping, TypeVar

from colocate.errors import InputError, PropError
from colocate.model.cluster import Cluster, OnlineServiceSpec
from colocate.model.pools import POOL_FIELDS, NodePoolProps, pool_from_fields
from colocate.model.scheduling import ImageRef, reference_error
from colocate.model.slo import LatencySlo
from colocate.model.tiers import PriorityTier, validate_tiers

T = TypeVar("T")


def load(data: Mapping, registry_host: str, file: str) -> Cluster:
    """``data`` is colocate.yaml's ``cluster`` mapping; ``registry_host`` (registry.host) is where
    the online services' images are pulled from, so their paths in the file carry no host."""
    pools = tuple(_props(file, f"$.cluster.pools[{i}]", lambda p=p: _pool(p)) for i, p in enumerate(data["pools"]))
    _unique(file, "$.cluster.pools", [p.name for p in pools], "each pool is one node group with its own files in "
            "dist/nodes/, so give each a name of its own")
    names = [p.name for p in pools]
    roles = data["poolRoles"]
    for role, pool in roles.items():
        _a_pool(file, f"$.cluster.poolRoles.{role}", pool, names)
    placement = tuple(data.get("onlineServicePools", ()))
    for i, pool in enumerate(placement):
        _a_pool(file, f"$.cluster.onlineServicePools[{i}]", pool, names)
    tiers = tuple(_tier(t) for t in data["tiers"])
    _props(file, "$.cluster.tiers", lambda: validate_tiers(tiers))
    services = data["onlineServices"]
    _unique(file, "$.cluster.onlineServices", [s["name"] for s in services], "each service is one Deployment "
            "and Service in the online namespace")
    ns = data["namespaces"]
    return _props(file, "$.cluster", lambda: Cluster(
        pools=pools,
        tiers=tiers,
        online_pool=roles["online"],
        mixed_pool=roles["mixed"],
        monitoring_pool=roles["monitoring"],
        online_namespace=ns["online"],
        training_namespace=ns["training"],
        monitoring_namespace=ns["monitoring"],
        kubeflow_namespace=ns["kubeflow"],
        prometheus_release=data["prometheusRelease"],
        online_services=tuple(_service(file, f"$.cluster.onlineServices[{i}]", s, registry_host)
                              for i, s in enumerate(services)),
        online_service_pools=placement,
        **_given(ns, prepull="prepull_namespace", control="control_namespace", kueue="kueue_namespace"),
        **_given(data, trainingClaims="training_claims", trainingQueue="training_queue"),
    ))


def _given(data: Mapping, **fields: str) -> dict:
    """The keys present in ``data``, under their field names; absent ones keep the model's default."""
    return {field: data[key] for key, field in fields.items() if key in data}


def _pool(data: Mapping) -> NodePoolProps:
    """A pool entry, field by field of POOL_FIELDS; a key left out keeps the model's default."""
    values = {}
    for f in POOL_FIELDS:
        where, found = data, True
        for part in f.key.split("."):
            found = isinstance(where, Mapping) and part in where
            if not found:
                break
            where = where[part]
        if found:
            values[f.attr] = f.read(where)
    props = pool_from_fields(values)
    props.validate()
    return props


def _tier(data: Mapping) -> PriorityTier:
    return PriorityTier(data["name"], data["value"], data["role"], data.get("description", ""),
                        **_given(data, globalDefault="global_default", preemptionPolicy="preemption_policy"))


def _service(file: str, where: str, data: Mapping, registry_host: str) -> OnlineServiceSpec:
    path, ref = data["image"], ImageRef.parse(data["image"])
    if ref.registry or "/" not in ref.repository or not ref.pinned or reference_error(f"{registry_host}/{path}"):
        raise InputError(file, f"{where}.image", f"{path!r} is not <project>/<repository>:<tag> (a tag other than "
                         "latest, or @<digest>) in the registry mirror: write the path without a host, such as "
                         f"ml/recsys-inference:1.0.0; colocate pulls it from registry.host ({registry_host})")
    slo = data.get("slo")
    spec = OnlineServiceSpec(
        name=data["name"], image=f"{registry_host}/{path}", cpu=str(data["cpu"]), memory=str(data["memory"]),
        port=data["port"], **_given(data, replicas="replicas", peakReplicas="peak_replicas", gpus="gpus"),
        slo=None if slo is None else LatencySlo(
            metric=slo["metric"], objective_seconds=slo["objectiveSeconds"],
            **_given(slo, selectorLabel="selector_label", selectorValue="selector_value", regression="regression",
                     path="path")),
    )
    if spec.slo:
        _props(file, f"{where}.slo", lambda: spec.slo.validate(f"OnlineService {spec.name!r}"))
    return spec


def _props(file: str, where: str, make: Callable[[], T]) -> T:
    """``make()``, its PropError (a prop the model refuses) as bad input at ``where`` in ``file``."""
    try:
        return make()
    except PropError as err:
        raise InputError(file, where, str(err)) from None


def _unique(file: str, where: str, names: list[str], why: str) -> None:
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError(file, f"{where}[{i}].name", f"{name!r} is also the name of {where.rpartition('.')[2]}"
                             f"[{names.index(name)}]; {why}")


def _a_pool(file: str, where: str, name: str, names: list[str]) -> None:
    if name not in names:
        raise InputError(file, where, f"{name!r} is not a pool (pools: {', '.join(names)})")

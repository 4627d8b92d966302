"""TenantNamespace: a namespace fenced for one kind of workload.

Pod Security Admission labels, a ResourceQuota, a LimitRange, and NetworkPolicies that deny
by default and then allow same-namespace traffic, DNS and the image registry.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Literal, Mapping, Sequence

from constructs import Construct

from colocate.model import quantity
from colocate.errors import PropError
from colocate.constructs._k8s import emit
from colocate.constructs.namespace import PSA_LEVELS, Namespace, NamespaceProps
from colocate.model.validate import check_dns_label
from colocate.model.names import GUARD_ANNOTATIONS, TIER_LABEL

_QUANTITY_KIND = {"cpu": "cpu", "memory": "memory"}


def _quantity_kind(resource: str) -> str:
    """Kind of quantity a quota or limit key holds: ``requests.cpu`` -> ``cpu``."""
    base = resource.rsplit(".", 1)[-1] if resource.startswith(("requests.", "limits.")) else resource
    if resource.endswith("nvidia.com/gpu"):
        return "count"
    return _QUANTITY_KIND.get(base, "memory" if "storage" in base else "count")


@dataclass(frozen=True)
class LimitRangeProps:
    """Per-container defaults and ceiling applied by a LimitRange."""

    #: Requests given to containers that set none, e.g. ``{"cpu": "500m", "memory": "1Gi"}``.
    default_request: Mapping[str, str]
    #: Limits given to containers that set none.
    default_limit: Mapping[str, str]
    #: Largest limit one container may set. Default: no ceiling.
    max: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TenantNamespaceProps:
    """Props of a TenantNamespace."""

    #: Namespace name.
    name: str
    #: Which tier's workloads run here; written as the ``colocate.io/tier`` label.
    tier: Literal["online", "offline"]
    #: CIDRs of the image registry that pods may reach (TCP 443). Required: egress is denied otherwise.
    registry_cidrs: Sequence[str]
    #: Pod Security Admission level enforced. Default ``baseline``; ``restricted`` is warned about.
    pod_security: Literal["privileged", "baseline", "restricted"] = "baseline"
    #: ResourceQuota ``spec.hard``. Default: no quota.
    quota: Mapping[str, str] = field(default_factory=dict)
    #: LimitRange for containers. Default: none.
    limit_range: LimitRangeProps | None = None
    #: Namespaces whose pods may connect in (e.g. ``monitoring`` for scraping). Default: none.
    ingress_from_namespaces: Sequence[str] = ()
    #: TCP ports open to any source (a service's public port). Default: none.
    ingress_ports_from_anywhere: Sequence[int] = ()


class TenantNamespace(Construct):
    """Namespace, ResourceQuota, LimitRange and default-deny NetworkPolicies."""

    def __init__(self, scope: Construct, id: str, props: TenantNamespaceProps):
        super().__init__(scope, id)
        self.props = props
        self._validate()
        ns = props.name
        Namespace(self, "namespace", NamespaceProps(name=ns, enforce=props.pod_security, warn_and_audit="restricted",
                                                    labels={TIER_LABEL: props.tier}))
        if props.quota:
            emit(self, "quota", {
                "apiVersion": "v1", "kind": "ResourceQuota",
                "metadata": {"name": f"{ns}-quota", "namespace": ns, "annotations": dict(GUARD_ANNOTATIONS)},
                "spec": {"hard": {k: quantity.canonical(v, _quantity_kind(k)) for k, v in props.quota.items()}},
            })
        if props.limit_range:
            lr = props.limit_range
            item = {"type": "Container",
                    "defaultRequest": self._canonical(lr.default_request),
                    "default": self._canonical(lr.default_limit)}
            if lr.max:
                item["max"] = self._canonical(lr.max)
            emit(self, "limits", {
                "apiVersion": "v1", "kind": "LimitRange",
                "metadata": {"name": f"{ns}-limits", "namespace": ns, "annotations": dict(GUARD_ANNOTATIONS)},
                "spec": {"limits": [item]},
            })
        for name, spec in self._network_policies():
            emit(self, name, {
                "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": name, "namespace": ns, "annotations": dict(GUARD_ANNOTATIONS)}, "spec": spec,
            })

    @staticmethod
    def _canonical(values: Mapping[str, str]) -> dict[str, str]:
        return {k: quantity.canonical(v, _quantity_kind(k)) for k, v in values.items()}

    def _validate(self) -> None:
        p, where = self.props, f"TenantNamespace {self.props.name!r}"
        check_dns_label(where, "name", p.name)
        if p.tier not in ("online", "offline"):
            raise PropError(where, "tier", f"{p.tier!r} must be 'online' or 'offline'")
        if p.pod_security not in PSA_LEVELS:
            raise PropError(where, "pod_security", f"{p.pod_security!r} must be one of {', '.join(PSA_LEVELS)}")
        if not p.registry_cidrs:
            raise PropError(where, "registry_cidrs", "is empty: pods could not reach the image registry")
        for i, cidr in enumerate(p.registry_cidrs):
            try:
                ipaddress.ip_network(cidr)
            except ValueError as exc:
                raise PropError(where, f"registry_cidrs[{i}]", str(exc)) from None
        for prop, values in (("quota", p.quota),
                             *((f"limit_range.{f}", getattr(p.limit_range, f)) for f in ("default_request", "default_limit", "max")
                               if p.limit_range)):
            for key, value in values.items():
                try:
                    quantity.canonical(value, _quantity_kind(key))
                except ValueError as exc:
                    raise PropError(where, f"{prop}[{key!r}]", str(exc)) from None
        if p.limit_range:
            for key, request in p.limit_range.default_request.items():
                limit = p.limit_range.default_limit.get(key)
                if limit is not None and quantity.parse(request) > quantity.parse(limit):
                    raise PropError(where, f"limit_range.default_request[{key!r}]",
                                    f"{request} is above the default limit {limit}")
        for i, ns in enumerate(p.ingress_from_namespaces):
            check_dns_label(where, f"ingress_from_namespaces[{i}]", ns)
        for i, port in enumerate(p.ingress_ports_from_anywhere):
            if not isinstance(port, int) or not 0 < port < 65536:
                raise PropError(where, f"ingress_ports_from_anywhere[{i}]", f"{port!r} is not a TCP port")

    def _network_policies(self) -> list[tuple[str, dict]]:
        p = self.props
        same_namespace = [{"podSelector": {}}]
        policies = [
            ("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
            ("allow-same-namespace", {
                "podSelector": {}, "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": same_namespace}], "egress": [{"to": same_namespace}],
            }),
            ("allow-dns", {
                "podSelector": {}, "policyTypes": ["Egress"],
                "egress": [{
                    "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                    "ports": [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}],
                }],
            }),
            # Not for image pulls: the kubelet pulls images from the node's network, which no
            # NetworkPolicy governs. This lets the pods themselves reach Harbor over HTTPS (datasets
            # and models kept there, artifacts pushed back); docs/training.md.
            ("allow-registry", {
                "podSelector": {}, "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": c}} for c in p.registry_cidrs],
                            "ports": [{"port": 443, "protocol": "TCP"}]}],
            }),
        ]
        if p.ingress_from_namespaces:
            policies.append(("allow-ingress-from-namespaces", {
                "podSelector": {}, "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}
                                      for ns in p.ingress_from_namespaces]}],
            }))
        if p.ingress_ports_from_anywhere:
            policies.append(("allow-service-ports", {
                "podSelector": {}, "policyTypes": ["Ingress"],
                "ingress": [{"ports": [{"port": port, "protocol": "TCP"} for port in p.ingress_ports_from_anywhere]}],
            }))
        return policies

from __future__ import annotations

import pytest
import cdk8s

from colocate.constructs.tenant_namespace import LimitRangeProps, TenantNamespace, TenantNamespaceProps
from colocate.errors import PropError


def synth(**overrides) -> dict[tuple[str, str], dict]:
    chart = cdk8s.Testing.chart()
    props = dict(name="training", tier="offline", registry_cidrs=("10.20.0.0/24",),
                 quota={"requests.cpu": "189", "requests.nvidia.com/gpu": "12", "requests.memory": "4096Mi"},
                 limit_range=LimitRangeProps({"cpu": "1", "memory": "2Gi"}, {"cpu": "2", "memory": "2Gi"}))
    TenantNamespace(chart, "ns", TenantNamespaceProps(**{**props, **overrides}))
    return {(o["kind"], o["metadata"]["name"]): o for o in cdk8s.Testing.synth(chart)}


def test_namespace_has_pod_security_and_tier_labels():
    labels = synth()[("Namespace", "training")]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert labels["colocate.io/tier"] == "offline"


def test_quota_values_are_canonical():
    hard = synth()[("ResourceQuota", "training-quota")]["spec"]["hard"]
    assert hard == {"requests.cpu": "189", "requests.nvidia.com/gpu": "12", "requests.memory": "4Gi"}


def test_network_policies_deny_by_default_and_allow_dns_and_registry():
    objs = synth()
    assert objs[("NetworkPolicy", "default-deny")]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    dns = objs[("NetworkPolicy", "allow-dns")]["spec"]["egress"][0]
    assert {"port": 53, "protocol": "UDP"} in dns["ports"]
    registry = objs[("NetworkPolicy", "allow-registry")]["spec"]["egress"][0]
    assert registry["to"] == [{"ipBlock": {"cidr": "10.20.0.0/24"}}]


@pytest.mark.parametrize("overrides, prop", [
    ({"registry_cidrs": ()}, "registry_cidrs"),
    ({"registry_cidrs": ("10.0.0.0/33",)}, "registry_cidrs[0]"),
    ({"quota": {"requests.cpu": "many"}}, "quota['requests.cpu']"),
    ({"pod_security": "strict"}, "pod_security"),
    ({"limit_range": LimitRangeProps({"memory": "4Gi"}, {"memory": "2Gi"})}, "limit_range.default_request['memory']"),
])
def test_bad_props_are_refused_naming_the_prop(overrides, prop):
    with pytest.raises(PropError) as err:
        synth(**overrides)
    assert err.value.prop == prop

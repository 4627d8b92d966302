from __future__ import annotations

import cdk8s
import pytest

from colocate.constructs.control_plane import ControlPlane, ControlPlaneProps
from colocate.errors import PropError


def synth(props: ControlPlaneProps | None = None) -> dict[str, dict]:
    chart = cdk8s.Testing.chart()
    ControlPlane(chart, "cp", props if props is not None else ControlPlaneProps())
    return {o["kind"]: o for o in cdk8s.Testing.synth(chart)}


def test_every_scraped_component_listens_beyond_loopback():
    objs = synth()
    cluster = objs["ClusterConfiguration"]
    assert cluster["apiVersion"] == "kubeadm.k8s.io/v1beta3"
    assert cluster["scheduler"]["extraArgs"] == {"bind-address": "0.0.0.0"}
    assert cluster["controllerManager"]["extraArgs"] == {"bind-address": "0.0.0.0"}
    assert cluster["etcd"]["local"]["extraArgs"] == {"listen-metrics-urls": "http://0.0.0.0:2381"}
    assert objs["KubeProxyConfiguration"]["metricsBindAddress"] == "0.0.0.0:10249"


def test_an_ipv6_address_is_bracketed_in_urls():
    objs = synth(ControlPlaneProps(metrics_address="::"))
    assert objs["ClusterConfiguration"]["etcd"]["local"]["extraArgs"]["listen-metrics-urls"] == "http://[::]:2381"
    assert objs["KubeProxyConfiguration"]["metricsBindAddress"] == "[::]:10249"


@pytest.mark.parametrize("address", ["127.0.0.1", "localhost", "::1"])
def test_a_loopback_address_is_refused_naming_the_prop(address):
    with pytest.raises(PropError, match="metrics_address"):
        synth(ControlPlaneProps(metrics_address=address))

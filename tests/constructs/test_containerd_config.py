"""ContainerdConfig: the hosts.toml files and the CRI drop-in, read back the way containerd reads
them (containerd v1.7.13 remotes/docker/config/hosts.go, pkg/cri/config/config.go)."""
from __future__ import annotations

import tomllib

import cdk8s
import pytest

from colocate.constructs.containerd_config import ContainerdConfig, ContainerdConfigProps
from colocate.errors import PropError

CA = "/etc/containerd/certs.d/harbor.example.com/ca.crt"
PROJECTS = {"docker.io": "dockerhub", "quay.io": "quay", "registry.k8s.io": "k8s"}
IMAGES = ("quay.io/prometheus/prometheus", "kubeflow/training-operator:v1-855e096", "registry.k8s.io/pause:3.9")


def files(**overrides) -> dict[str, dict]:
    props = dict(registry_host="harbor.example.com", proxy_projects=PROJECTS, upstream_images=IMAGES,
                 sandbox_image="harbor.example.com/k8s/pause:3.9", ca_file=CA)
    config = ContainerdConfig(cdk8s.Testing.chart(), "containerd", ContainerdConfigProps(**{**props, **overrides}))
    return {path: tomllib.loads(text) for path, text in config.files.items()}


def test_one_hosts_file_per_proxied_registry_and_one_for_harbor():
    assert sorted(files()) == ["certs.d/docker.io/hosts.toml", "certs.d/harbor.example.com/hosts.toml",
                               "certs.d/quay.io/hosts.toml", "certs.d/registry.k8s.io/hosts.toml", "conf.d/colocate.toml"]


def test_a_proxied_registry_none_of_our_images_use_is_redirected_too():
    """So a hand-written manifest may pull from it (rule COL009 counts it as served)."""
    got = files(proxy_projects={**PROJECTS, "ghcr.io": "ghcr"})
    assert "certs.d/ghcr.io/hosts.toml" in got


def test_harbor_is_trusted_through_its_ca_and_only_pulled_from():
    assert files()["certs.d/harbor.example.com/hosts.toml"] == {
        "server": "https://harbor.example.com", "capabilities": ["pull", "resolve"], "ca": CA}


@pytest.mark.parametrize("registry, server, project", [
    ("quay.io", "https://quay.io", "quay"),
    ("registry.k8s.io", "https://registry.k8s.io", "k8s"),
    # containerd's own default server for docker.io (hosts.go, ConfigureHosts).
    ("docker.io", "https://registry-1.docker.io", "dockerhub"),
])
def test_an_upstream_registry_is_pulled_through_its_proxy_cache_project_first(registry, server, project):
    hosts = files()[f"certs.d/{registry}/hosts.toml"]
    assert hosts["server"] == server
    # The URL path is the API root (override_path): containerd asks Harbor for
    # /v2/<project>/<repository>/manifests/<tag>, and Harbor's proxy cache drops <project>.
    assert hosts["host"] == {f"https://harbor.example.com/v2/{project}": {
        "capabilities": ["pull", "resolve"], "ca": CA, "override_path": True}}


def test_the_drop_in_sets_sandbox_image_registry_path_and_systemd_runc():
    cri = files()["conf.d/colocate.toml"]["plugins"]["io.containerd.grpc.v1.cri"]
    assert files()["conf.d/colocate.toml"]["version"] == 2
    assert cri["sandbox_image"] == "harbor.example.com/k8s/pause:3.9"
    assert cri["registry"] == {"config_path": "/etc/containerd/certs.d"}
    assert cri["containerd"]["runtimes"]["runc"] == {"runtime_type": "io.containerd.runc.v2",
                                                      "options": {"SystemdCgroup": True}}


def test_without_a_ca_file_no_ca_is_written():
    out = files(ca_file=None)
    assert "ca" not in out["certs.d/harbor.example.com/hosts.toml"]
    assert "ca" not in out["certs.d/quay.io/hosts.toml"]["host"]["https://harbor.example.com/v2/quay"]


def test_a_harbor_port_stays_in_the_folder_and_urls():
    out = files(registry_host="harbor.internal:8443")
    assert out["certs.d/harbor.internal:8443/hosts.toml"]["server"] == "https://harbor.internal:8443"
    assert "https://harbor.internal:8443/v2/quay" in out["certs.d/quay.io/hosts.toml"]["host"]


@pytest.mark.parametrize("overrides, prop", [
    ({"upstream_images": (*IMAGES, "nvcr.io/nvidia/k8s-device-plugin:v0.14.5")}, "proxy_projects"),
    ({"proxy_projects": {**PROJECTS, "quay.io": "Quay Cache"}}, "proxy_projects['quay.io']"),
    ({"upstream_images": (*IMAGES, "harbor.example.com/ml/x:1")}, "upstream_images"),
    ({"ca_file": "ca.crt"}, "ca_file"),
    ({"ca_file": "/etc/containerd/../ca.crt"}, "ca_file"),
    ({"registry_host": "https://harbor.example.com"}, "registry_host"),
    ({"sandbox_image": "harbor.example.com/k8s/pause:latest"}, "sandbox_image"),
])
def test_bad_props_are_refused_naming_the_prop(overrides, prop):
    with pytest.raises(PropError) as err:
        files(**overrides)
    assert err.value.prop == prop

"""The Harbor mirror on the nodes: every pool's containerd files as containerd reads them, and
every image dist/ names is served by a registry the nodes are configured for."""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from colocate import ROOT, app, config as config_mod
from colocate.checker import manifests
from colocate.constructs import kube_prometheus_stack as kps
from colocate.errors import InputError
from colocate.model.pools import CONTAINERD_CERTS_DIR, CONTAINERD_DROP_IN, PAUSE_IMAGE
from colocate.model.scheduling import ImageRef
from tests.helpers import colocate, yaml_load, yaml_load_all

CONFIG = config_mod.load()

#: Upstream images the cluster pulls by their upstream name even with mirrorUpstreamImages, and
#: why. No file in dist/ names them, so the nodes' hosts.toml must serve their registries.
UPSTREAM_EXCEPTIONS = {
    image: "kube-prometheus-stack renders it from the chart's defaults; its global.imageRegistry swaps only the "
           "registry host, which no Harbor proxy-cache project serves"
    for image in kps.CHART_IMAGES
}


def _images(value: Any) -> Iterator[str]:
    """Image references anywhere in a manifest: ``image:`` strings (pod templates), Helm values
    ``image: {registry?, repository, tag?}``, and kustomize ``images: [name=newName:tag]``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "image" and isinstance(item, str):
                yield item
            elif key == "image" and isinstance(item, dict) and isinstance(item.get("repository"), str):
                registry = item.get("registry")
                yield (f"{registry}/" if registry else "") + item["repository"] + (f":{item['tag']}" if item.get("tag") else "")
            elif key == "kustomize" and isinstance(item, dict):
                yield from (entry.partition("=")[2] for entry in item.get("images") or [])
            else:
                yield from _images(item)
    elif isinstance(value, list):
        for item in value:
            yield from _images(item)


def dist_images(files: dict[str, str]) -> dict[str, str]:
    """image -> the first dist/ file naming it."""
    out: dict[str, str] = {}
    for path, text in files.items():
        if path.endswith(".yaml"):
            for doc in yaml_load_all(text):
                for image in _images(doc):
                    out.setdefault(image, path)
    return out


def node_files(files: dict[str, str]) -> dict[str, dict[str, dict]]:
    """pool -> path under /etc/containerd/ -> parsed TOML."""
    out: dict[str, dict[str, dict]] = {}
    for path, text in files.items():
        parts = path.split("/")
        if parts[0] == "nodes" and parts[2] == "containerd":
            out.setdefault(parts[1], {})["/".join(parts[3:])] = tomllib.loads(text)
    return out


def served(image: str, hosts: dict[str, dict], harbor: str) -> bool:
    """Harbor serves it, or its registry's hosts.toml sends it to a Harbor proxy-cache project."""
    registry = ImageRef.parse(image).host
    if registry == harbor:
        return True
    mirrors = (hosts.get(f"certs.d/{registry}/hosts.toml") or {}).get("host") or {}
    return any(url.startswith(f"https://{harbor}/v2/") and m.get("override_path") for url, m in mirrors.items())


def test_every_pool_has_the_containerd_files_next_to_its_kubelet_files(rendered):
    pools = {p.split("/")[1] for p in rendered if p.startswith("nodes/")}
    nodes = node_files(rendered)
    assert set(nodes) == pools
    for pool in pools:
        assert f"nodes/{pool}/kubeletconfiguration.yaml" in rendered
        assert nodes[pool] == nodes["mixed"], "every pool pulls the same images"


def test_the_hosts_files_follow_containerds_format(rendered):
    for hosts in node_files(rendered).values():
        harbor = hosts[f"certs.d/{CONFIG.registry_host}/hosts.toml"]
        assert harbor == {"server": f"https://{CONFIG.registry_host}", "capabilities": ["pull", "resolve"],
                          "ca": CONFIG.registry_ca_file}
        for path, doc in hosts.items():
            if not path.startswith("certs.d/") or path.startswith(f"certs.d/{CONFIG.registry_host}/"):
                continue
            registry = path.split("/")[1]
            project = CONFIG.registry_proxy_projects[registry]
            assert doc["server"].startswith("https://") and set(doc) == {"server", "host"}
            assert doc["host"] == {f"https://{CONFIG.registry_host}/v2/{project}": {
                "capabilities": ["pull", "resolve"], "ca": CONFIG.registry_ca_file, "override_path": True}}


def test_the_mirrored_registries_are_derived_from_the_images_we_deploy():
    built = app.build()
    upstream = set().union(*(c.upstream_images for c in built.charts))
    assert PAUSE_IMAGE in upstream and set(kps.CHART_IMAGES) <= upstream
    registries = {ImageRef.parse(i).host for i in upstream}
    files = app.render_files(built)
    for hosts in node_files(files).values():
        assert {p.split("/")[1] for p in hosts if p.startswith("certs.d/")} == registries | {CONFIG.registry_host}
    # The reference cluster's images come from exactly these registries today.
    assert registries == {"docker.io", "nvcr.io", "quay.io", "registry.k8s.io"}


def test_the_sandbox_image_is_kubeadms_pause_from_the_mirror(rendered):
    for hosts in node_files(rendered).values():
        cri = hosts[str(Path(CONTAINERD_DROP_IN).relative_to("/etc/containerd"))]["plugins"]["io.containerd.grpc.v1.cri"]
        assert cri["sandbox_image"] == CONFIG.image(PAUSE_IMAGE) == f"{CONFIG.registry_host}/k8s/pause:3.9"
        assert cri["registry"]["config_path"] == CONTAINERD_CERTS_DIR


@pytest.mark.parametrize("mirror", [True, False])
def test_every_image_in_dist_is_served_by_a_configured_registry(rendered, mirror):
    """With mirrorUpstreamImages every image dist/ names is on Harbor, but kube-prometheus-stack's
    (its global.imageRegistry would give Harbor paths no proxy-cache project serves,
    docs/monitoring.md); without it, they keep their upstream names. Either way the nodes'
    hosts.toml send each registry to Harbor."""
    files = rendered if mirror else app.render_files(app.build(dataclasses.replace(CONFIG, mirror_upstream_images=False)))
    images = dist_images(files)
    assert len(images) >= 6, images  # pod templates, Helm values and the kustomize override are all read
    for hosts in node_files(files).values():
        unserved = {i: p for i, p in images.items() if not served(i, hosts, CONFIG.registry_host)}
        assert not unserved
        assert not [i for i in UPSTREAM_EXCEPTIONS if not served(i, hosts, CONFIG.registry_host)]
    if mirror:
        ours = [i for i, path in images.items() if not str(path).startswith("apps/kube-prometheus-stack/")]
        assert ours and {ImageRef.parse(i).host for i in ours} == {CONFIG.registry_host}
    else:
        assert {ImageRef.parse(i).host for i in images} > {CONFIG.registry_host}


def test_an_image_from_a_registry_without_a_proxy_project_stops_synth():
    config = dataclasses.replace(CONFIG, registry_proxy_projects={
        k: v for k, v in CONFIG.registry_proxy_projects.items() if k != "nvcr.io"})
    with pytest.raises(InputError, match=r"colocate.yaml:\$\.registry\.proxyCacheProjects: no Harbor proxy-cache "
                                          r"project for nvcr.io"):
        app.build(config)


@pytest.mark.parametrize("key, value", [
    ("caFile", "ca.crt"),                       # a path on the node, so absolute
    ("pullSecret", "Harbor_Pull"),              # a Secret name
    ("proxyCacheProjects", {"quay": "quay"}),   # keyed by registry host
    ("proxyCacheProjects", {"quay.io": "Quay"}),
])
def test_colocate_yaml_refuses_a_bad_registry_setting(tmp_path, key, value):
    data = yaml_load((ROOT / "colocate.yaml").read_text())
    data["registry"][key] = value
    (tmp_path / "colocate.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=rf"\$\.registry\.{key}"):
        config_mod.load(tmp_path / "colocate.yaml")


def test_colocate_yaml_registry_settings_reach_the_config():
    assert CONFIG.registry_ca_file == f"{CONTAINERD_CERTS_DIR}/{CONFIG.registry_host}/ca.crt"
    assert CONFIG.registry_pull_secret is None
    assert set(CONFIG.registry_proxy_projects) == {"docker.io", "nvcr.io", "quay.io", "registry.k8s.io"}


def test_upstream_images_move_into_their_proxy_cache_project():
    assert CONFIG.image("nvcr.io/nvidia/k8s/dcgm-exporter:3.3.3") == "harbor.example.com/nvcr/nvidia/k8s/dcgm-exporter:3.3.3"
    # Docker Hub: no registry in the name, and official images under library/ (Harbor asks
    # Docker Hub for the path after the project).
    assert CONFIG.image("kubeflow/training-operator:v1") == "harbor.example.com/dockerhub/kubeflow/training-operator:v1"
    assert CONFIG.image("busybox@sha256:ab") == "harbor.example.com/dockerhub/library/busybox@sha256:ab"
    assert dataclasses.replace(CONFIG, mirror_upstream_images=False).image("busybox:1") == "busybox:1"


@pytest.mark.parametrize("secret", [None, "harbor-pull"])
def test_pod_templates_in_tenant_namespaces_get_the_pull_secret(secret):
    files = app.render_files(app.build(dataclasses.replace(CONFIG, registry_pull_secret=secret)))
    docs = [d for p, t in files.items() if p.startswith("apps/") and p.endswith(".yaml")
            for d in [manifests.Doc(p, 1, yaml_load(t))]]
    tenant = {"online", "training", "image-prepull"}
    pods = [pod for d in docs if d.namespace in tenant for pod in manifests.pod_specs(d)]
    assert len(pods) >= 5  # the online Deployment, every TFJob replica, the pre-pull DaemonSet
    for pod in pods:
        assert pod.spec.get("imagePullSecrets") == ([{"name": secret}] if secret else None), pod.doc.file


def test_the_checker_reads_no_toml_under_dist_nodes():
    nodes = ROOT / "dist" / "nodes"
    assert any(nodes.rglob("*.toml"))
    assert not [p for p in manifests.files([nodes]) if p.suffix == ".toml"]
    proc = colocate("check", "dist/nodes/")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 errors, 0 warnings" in proc.stdout

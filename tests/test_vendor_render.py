"""The vendored charts and the training-operator overlay render offline with the renderers Argo CD
v2.10.15 bundles (helm 3.14.4, kustomize 5.2.1; colocate/synth/renderers.py builds them into bin/).

Chart defaults only, no values of ours yet (the rendering with our values is tested elsewhere). A missing or
stale renderer fails the test with how to build it: these tests never skip. Every render runs with
a proxy that refuses connections and empty helm homes, so nothing can come from the network or
from a chart repository configured on the machine."""
from __future__ import annotations

import subprocess

import pytest
import yaml

from colocate import ROOT
from colocate.base import vendored
from colocate.charts import training_operator
from colocate.constructs import dcgm_exporter, device_plugin
from colocate.model import names
from colocate.synth.renderers import BUILDS, HOW_TO_BUILD
from colocate.simulate.toolchain import BIN, up_to_date
from tests.helpers import yaml_load

#: The cluster's Kubernetes version (colocate.yaml simulation.kubernetes).
KUBE_VERSION = "1.28.15"
TREES = vendored.load()


def _tools() -> dict:
    """bin/helm and bin/kustomize, or a failure (not a skip, not a fixture error) saying how to build them."""
    for build in BUILDS:
        if not (BIN / build.name).is_file():
            pytest.fail(f"bin/{build.name} is missing: {HOW_TO_BUILD}", pytrace=False)
        if not up_to_date(build):
            pytest.fail(f"bin/{build.name} is not the {build.version} build colocate/synth/renderers.py pins "
                        f"(stamp bin/.sim-{build.name}.stamp differs): {HOW_TO_BUILD}", pytrace=False)
    return {build.name: BIN / build.name for build in BUILDS}


@pytest.fixture(scope="module")
def offline_env(tmp_path_factory):
    home = tmp_path_factory.mktemp("helm-home")
    dead = "http://127.0.0.1:9"  # discard port: any attempt to fetch fails at once
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data"),
            "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "http_proxy": dead, "https_proxy": dead, "NO_PROXY": ""}


def _run(argv, env) -> str:
    result = subprocess.run([str(a) for a in argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{' '.join(map(str, argv))} failed (exit {result.returncode}):\n{result.stderr[-3000:]}"
    return result.stdout


def _objects(text: str) -> list[dict]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the overlay's CRDs are 3 MB
    return [doc for doc in yaml.load_all(text, Loader=loader) if doc]


def _helm_template(env, release: str, chart: str, namespace: str) -> tuple[str, list[dict]]:
    argv = [_tools()["helm"], "template", release, TREES[chart].root, "--namespace", namespace,
            "--kube-version", KUBE_VERSION]
    text = _run(argv, env)
    assert _run(argv, env) == text, f"helm template {chart} is not deterministic with the chart's defaults"
    return text, _objects(text)


def _find(objects, kind, name) -> dict:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name} not rendered; got {sorted((o['kind'], o['metadata']['name']) for o in objects)}"
    return found[0]


def _images(workload: dict) -> list[str]:
    spec = workload["spec"]["template"]["spec"]
    return [c["image"] for c in spec.get("initContainers", []) + spec["containers"]]


def test_renderers_are_the_versions_argo_cd_bundles(offline_env):
    tools = _tools()
    assert "Version:\"v3.14.4\"" in _run([tools["helm"], "version"], offline_env)
    assert _run([tools["kustomize"], "version"], offline_env).strip() == "v5.2.1"


def test_kube_prometheus_stack_renders_with_its_dependency_charts(offline_env):
    release = "kube-prometheus-stack"
    _, objects = _helm_template(offline_env, release, "kube-prometheus-stack", "monitoring")
    full = names.kps_fullname(release)
    _find(objects, "Deployment", f"{full}-operator")
    _find(objects, "Prometheus", f"{full}-prometheus")
    _find(objects, "Alertmanager", f"{full}-alertmanager")
    # One object from each dependency chart: they are read from the vendored charts/ folder.
    _find(objects, "Deployment", f"{release}-kube-state-metrics")
    _find(objects, "DaemonSet", f"{release}-prometheus-node-exporter")
    grafana = _find(objects, "Deployment", f"{release}-grafana")
    grafana_chart = TREES["grafana"]
    app_version = yaml_load((grafana_chart.root / "Chart.yaml").read_text())["appVersion"]
    assert f"docker.io/grafana/grafana:{app_version}" in _images(grafana)
    assert grafana["metadata"]["labels"]["helm.sh/chart"] == f"grafana-{grafana_chart.version}"


def test_dcgm_exporter_renders_its_daemonset_with_the_image_we_name(offline_env):
    _, objects = _helm_template(offline_env, "dcgm-exporter", "dcgm-exporter", "monitoring")
    daemonset = _find(objects, "DaemonSet", "dcgm-exporter")
    assert _images(daemonset) == [dcgm_exporter.IMAGE]


def test_nvidia_device_plugin_renders_its_daemonset_with_the_image_we_name(offline_env):
    _, objects = _helm_template(offline_env, "nvidia-device-plugin", "nvidia-device-plugin", "kube-system")
    daemonset = _find(objects, "DaemonSet", "nvidia-device-plugin")
    assert device_plugin.IMAGE in _images(daemonset)


def test_training_operator_overlay_builds_with_kustomize(offline_env):
    tools = _tools()
    overlay = TREES["training-operator"].root / training_operator.OVERLAY.removeprefix("manifests/")
    argv = [tools["kustomize"], "build", overlay]
    text = _run(argv, offline_env)
    assert _run(argv, offline_env) == text
    objects = _objects(text)
    deployment = _find(objects, "Deployment", "training-operator")
    assert deployment["metadata"]["namespace"] == training_operator.UPSTREAM_NAMESPACE
    tag = training_operator.OPERATOR_TAGS[TREES["training-operator"].tag]
    assert _images(deployment) == [f"{training_operator.OPERATOR_IMAGE}:{tag}"]
    _find(objects, "CustomResourceDefinition", f"{names.TFJOB_PLURAL}.{names.TFJOB_GROUP}")

"""The vendored charts and the training-operator overlay, rendered at synth time into
dist/apps/<release>/ (colocate/synth/vendor_render.py, charts/upstream.py; docs/gitops.md "Rendered manifests").

The committed files are what the real renderers give with our values (rendered afresh here, with
bin/helm and bin/kustomize, which `make test` builds); synth reads them back only while their
inputs and bytes are the recorded ones."""
from __future__ import annotations

import json
import shutil

import pytest

from colocate import ROOT, app
from colocate.synth import vendor_render as upstream
from colocate.charts.upstream import RenderedChart
from colocate.errors import InputError
from colocate.base.layout import INDEX_FILE
from tests.helpers import yaml_load

DIST = ROOT / "dist"
RENDERED = ("apps/kube-prometheus-stack", "apps/dcgm-exporter", "apps/kueue-upstream", "apps/nvidia-device-plugin",
            "apps/training-operator-upstream")


@pytest.fixture(scope="module")
def built():
    return app.build()


def _charts(built) -> dict[str, RenderedChart]:
    return {c.folder: c for c in built.charts if isinstance(c, RenderedChart)}


def test_every_upstream_source_is_rendered_into_its_own_folder(built):
    charts = _charts(built)
    assert sorted(charts) == sorted(RENDERED)
    index = yaml_load((DIST / INDEX_FILE).read_text())
    for folder, chart in charts.items():
        record = index["folders"][folder]["rendered"]
        assert record["inputs"] == chart.inputs, f"{folder}: dist/ is stale, run colocate synth"
        assert index["folders"][folder]["argocdApplication"] == chart.app_name


def test_committed_files_are_what_the_renderers_give(built):
    """Rendered afresh (no read-back), every file of every rendered folder, and the index, are
    byte for byte the committed ones."""
    for chart in _charts(built).values():
        upstream_objects = upstream.render(chart.row.source, chart.target)
        assert upstream_objects, chart.folder
    fresh = app.render_files(app.build(), reuse=())
    for path, text in fresh.items():
        if path == INDEX_FILE or path.startswith(tuple(f"{f}/" for f in RENDERED)):
            assert (DIST / path).read_text() == text, f"dist/{path} differs from a fresh render"
    on_disk = {p.relative_to(DIST).as_posix() for f in RENDERED for p in (DIST / f).glob("*.yaml")}
    assert on_disk == {p for p in fresh if p.startswith(tuple(f"{f}/" for f in RENDERED))}


def test_rendering_is_deterministic(built):
    chart = _charts(built)["apps/kube-prometheus-stack"]
    assert upstream.render(chart.row.source, chart.target) == upstream.render(chart.row.source, chart.target)


def _sorted(objects: list[dict]) -> list[str]:
    return sorted(json.dumps(o, sort_keys=True) for o in objects)


def _tree_with(tmp_path, folder: str):
    tree = tmp_path / "dist"
    (tree / folder).parent.mkdir(parents=True)
    shutil.copytree(DIST / folder, tree / folder)
    shutil.copy(DIST / INDEX_FILE, tree / INDEX_FILE)
    return tree


def test_an_unchanged_tree_is_read_back_and_an_edited_one_rendered_again(built, tmp_path):
    chart = _charts(built)["apps/dcgm-exporter"]
    tree = _tree_with(tmp_path, chart.folder)
    read_back = chart.objects([tree])
    assert chart.origin == str(tree)
    file = next((tree / chart.folder).glob("daemonset.*.yaml"))
    file.write_text(file.read_text().replace("priorityClassName:", "priorityClassName: x\n  # "))
    assert _sorted(chart.objects([tree])) == _sorted(read_back)
    assert chart.origin == "rendered", "a hand-edited rendered file was trusted"


def test_changed_values_are_rendered_again(built, tmp_path):
    chart = _charts(built)["apps/dcgm-exporter"]
    values = {**chart.row.source.values, "resources": {"requests": {"cpu": "123m", "memory": "64Mi"}}}
    source = upstream.HelmSource(chart.row.source.tree, chart.row.source.release, chart.row.source.namespace,
                                 values, chart.row.source.annotate)
    assert upstream.inputs_digest(source, chart.target) != chart.inputs
    objects = upstream.render(source, chart.target)
    daemonset = next(o for o in objects if o["kind"] == "DaemonSet")
    assert daemonset["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "123m"


def test_added_annotations_join_the_chart_lists_and_an_unknown_target_is_an_error():
    objects = [{"kind": "CustomResourceDefinition", "metadata": {"name": "a", "annotations": {
        "argocd.argoproj.io/sync-options": "ServerSideApply=true"}}}]
    upstream.annotate(objects, {"CustomResourceDefinition": {"argocd.argoproj.io/sync-options": "Prune=false"}})
    assert objects[0]["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "ServerSideApply=true,Prune=false"
    with pytest.raises(InputError, match="Deployment/gone"):
        upstream.annotate(objects, {"Deployment/gone": {"a": "b"}})


def test_a_missing_renderer_says_how_to_install_it(built, monkeypatch, tmp_path):
    """No helm anywhere (no $HELM, none on PATH, an empty tool folder) and no Go to build it."""
    import colocate.base.go_builds
    monkeypatch.setattr(colocate.base.go_builds, "BIN", tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("HELM", raising=False)
    chart = _charts(built)["apps/dcgm-exporter"]
    with pytest.raises(colocate.base.go_builds.ToolMissing,
                       match=r"rendering vendor/charts/dcgm-exporter needs helm: helm v3\.14\.4 not found .*go install"):
        upstream.render(chart.row.source, chart.target)


def test_crds_are_protected_and_the_exporters_monitor_skips_the_dry_run():
    for folder in ("apps/kube-prometheus-stack", "apps/training-operator-upstream"):
        crds = sorted((DIST / folder).glob("customresourcedefinition.*.yaml"))
        assert crds, folder
        for file in crds:
            annotations = yaml_load(file.read_text())["metadata"]["annotations"]
            assert {"Prune=false", "Delete=false"} <= set(annotations["argocd.argoproj.io/sync-options"].split(",")), file
            assert annotations["argocd.argoproj.io/compare-options"] == "IgnoreExtraneous", file
    monitor = yaml_load((DIST / "apps/dcgm-exporter/servicemonitor.monitoring.dcgm-exporter.yaml").read_text())
    assert monitor["metadata"]["annotations"]["argocd.argoproj.io/sync-options"] == "SkipDryRunOnMissingResource=true"

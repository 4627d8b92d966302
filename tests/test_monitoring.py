"""The monitoring Applications as synthesized into dist/: Helm sources, waves, selectors, secrets."""
from __future__ import annotations

import dataclasses
import re

import yaml

from tests.helpers import chart_values, yaml_load
from colocate import ROOT, app, checker, config as config_mod
from colocate.checker import kubeconform
from colocate.constructs import kube_prometheus_stack as kps
from colocate.model.scheduling import selector_matches as matches

DIST = ROOT / "dist"


def _objects(rendered: dict[str, str]) -> list[dict]:
    return [yaml_load(t) for p, t in rendered.items() if p.startswith("apps/")]


def _application(rendered: dict[str, str], name: str) -> dict:
    return yaml_load(rendered[f"apps/argocd/application.argocd.{name}.yaml"])


def test_kube_prometheus_stack_is_rendered_into_its_folder_at_wave_minus_8_with_server_side_apply(rendered):
    application = _application(rendered, "kube-prometheus-stack")
    source = application["spec"]["source"]
    config = config_mod.load()
    assert (source["repoURL"], source["path"]) == (config.gitops.repo_url, "dist/apps/kube-prometheus-stack")
    assert "chart" not in source and "helm" not in source
    assert application["metadata"]["name"] == "kube-prometheus-stack"
    prometheus = yaml_load(rendered["apps/kube-prometheus-stack/prometheus.monitoring.kube-prometheus-stack-prometheus.yaml"])
    assert prometheus["metadata"]["labels"]["chart"] == "kube-prometheus-stack-55.5.1"
    assert application["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-8"
    assert "ServerSideApply=true" in application["spec"]["syncPolicy"]["syncOptions"]
    assert application["spec"]["destination"]["namespace"] == "monitoring"
    assert "finalizers" not in application["metadata"], "deleting the Application must not delete the CRDs"


def test_dcgm_exporter_is_rendered_at_wave_minus_6_reading_the_generated_csv(rendered):
    application = _application(rendered, "dcgm-exporter")
    assert application["spec"]["source"]["path"] == "dist/apps/dcgm-exporter"
    assert application["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-6"
    daemonset = yaml_load(rendered["apps/dcgm-exporter/daemonset.monitoring.dcgm-exporter.yaml"])
    assert daemonset["metadata"]["labels"]["helm.sh/chart"] == "dcgm-exporter-3.3.0"
    config_map_name = next(v["configMap"]["name"] for v in daemonset["spec"]["template"]["spec"]["volumes"]
                           if "configMap" in v)
    assert f"apps/monitoring/configmap.monitoring.{config_map_name}.yaml" in rendered


def test_every_monitor_and_rule_in_dist_is_selected_by_the_stacks_prometheus(rendered):
    spec = chart_values("kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    monitors = [o for o in _objects(rendered) if o["kind"] in kps.MONITOR_KINDS]
    for obj in monitors:
        selector, namespaces = kps.rendered_selector(spec, obj["kind"], "kube-prometheus-stack")
        assert matches(selector, obj["metadata"].get("labels") or {}), f"{obj['kind']}/{obj['metadata']['name']}"
        assert namespaces == {}
    # The charts' own monitors are rendered into dist/ too (the DCGM exporter's, Grafana's, ...).
    assert {"dcgm-exporter", "kube-prometheus-stack-grafana"} <= {o["metadata"]["name"] for o in monitors}


def test_grep_password_in_dist_finds_key_names_only():
    """Every line that says "password" names a Secret key or an environment variable fed from one.
    CRDs are left out: their schema descriptions speak of passwords and hold no value."""
    hits = []
    for path in DIST.rglob("*.yaml"):
        if path.name.startswith("customresourcedefinition."):
            continue
        for line in path.read_text().splitlines():
            if re.search("password", line, re.IGNORECASE):
                hits.append((path.name, line.strip()))
    assert hits, "the Grafana Secret's password key name should be in dist/ (proves the scan reads the files)"
    for file, line in hits:
        key, _, value = line.partition(":")
        assert value.strip() in ("admin-password", "") or (key == "- name" and value.strip().endswith("_PASSWORD")), \
            f"{file}: {line}"
    assert "prom-operator" not in "".join(p.read_text() for p in DIST.rglob("*.yaml"))


def test_upstream_images_are_pulled_as_is_when_mirroring_is_off():
    config = dataclasses.replace(config_mod.load(), mirror_upstream_images=False)
    rendered = app.render_files(app.build(config))
    assert "global" not in chart_values("kube-prometheus-stack", config)
    daemonset = yaml_load(rendered["apps/dcgm-exporter/daemonset.monitoring.dcgm-exporter.yaml"])
    assert daemonset["spec"]["template"]["spec"]["containers"][0]["image"].startswith("nvcr.io/nvidia/k8s/dcgm-exporter:")


def test_kubeconform_validates_the_monitoring_objects_with_nothing_skipped():
    files = [DIST / "apps" / "monitoring", *(DIST / "apps" / "argocd").glob("application.argocd.*")]
    result = kubeconform.run(files, "1.28.0")
    assert (result.invalid, result.errors, result.skipped) == (0, 0, 0), result.resources
    assert result.valid >= 3


def test_colocate_check_reports_a_rule_without_the_release_label(tmp_path):
    import shutil
    copy = tmp_path / "dist"
    shutil.copytree(DIST, copy)
    (copy / "apps" / "monitoring" / "extra.yaml").write_text(yaml.safe_dump({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "unlabelled", "namespace": "monitoring", "labels": {"team": "ml"}},
        "spec": {"groups": [{"name": "g", "rules": [{"record": "x:y", "expr": "vector(1)"}]}]},
    }))
    result = checker.check([copy])
    found = [f for f in result.findings if f.rule == "COL220"]
    assert [(f.name, f.field) for f in found] == [("unlabelled", "metadata.labels")]
    assert "release" in found[0].message


def test_kube_state_metrics_exports_tfjob_conditions_and_annotations_as_the_catalog_says(rendered):
    """The KPS values enable kube-state-metrics' custom-resource-state config for TFJobs with the
    RBAC it needs; the metric it yields (name = <metricNamePrefix>_<name>, labels = the
    resource's and the metric's labelsFromPath plus the customresource_* labels kube-state-metrics
    v2.10.1 adds) is the catalog entry the alert and the dashboard are checked against."""
    from colocate.promql.catalog import catalog

    ksm = chart_values("kube-prometheus-stack")["kube-state-metrics"]
    assert ksm["customResourceState"]["enabled"] is True
    (resource,) = ksm["customResourceState"]["config"]["spec"]["resources"]
    assert resource["groupVersionKind"] == {"group": "kubeflow.org", "version": "v1", "kind": "TFJob"}
    condition, annotation = resource["metrics"]
    gauge = condition["each"]["gauge"]
    assert (condition["each"]["type"], gauge["path"], gauge["valueFrom"]) == ("Gauge", ["status", "conditions"], ["status"])
    info = annotation["each"]["info"]
    assert (annotation["each"]["type"], info["path"]) == ("Info", ["metadata", "annotations"])
    common = set(resource["labelsFromPath"]) | {"customresource_group", "customresource_kind", "customresource_version"}
    for metric, labels in ((condition, common | set(gauge["labelsFromPath"])), (annotation, common | {info["labelFromKey"]})):
        entry = catalog().metrics[f"{resource['metricNamePrefix']}_{metric['name']}"]
        assert entry.exporter == "kube-state-metrics"
        assert labels <= entry.labels and {"job", "instance"} <= entry.labels
    assert {"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["list", "watch"]} in ksm["rbac"]["extraRules"]

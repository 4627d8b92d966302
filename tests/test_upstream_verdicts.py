"""Every finding `colocate check` had on the rendered upstream objects (dist/apps/<release>/), with
its verdict: a true fault fixed through our values or a rendered row's annotations (the key is
named), a false alarm fixed in the rule, or a finding accepted with its reason. The rules run on
these objects like on ours: nothing vendored is excluded. (The PromQL rules' verdicts on the
kube-prometheus-stack dashboards and rules: tests/test_upstream_promql_verdicts.py.)"""
from __future__ import annotations

import pytest

from colocate import ROOT, checker

DIST = ROOT / "dist"
RENDERED = ("kube-prometheus-stack", "dcgm-exporter", "nvidia-device-plugin", "training-operator-upstream")

#: (rule, file under dist/apps/, verdict: where it is fixed and why). Each finding is gone.
FIXED = [
    ("COL008", "kube-prometheus-stack/pod.monitoring.kube-prometheus-stack-grafana-test.yaml",
     "values grafana.testFramework.enabled=false: Grafana's `helm test` Pod ran at priority 0 and pulled "
     "docker.io/bats; it is a Helm test hook, which Argo CD never runs"),
    ("COL220", "kube-prometheus-stack/servicemonitor.monitoring.kube-prometheus-stack-grafana.yaml",
     "values grafana.serviceMonitor.labels: the grafana chart's ServiceMonitor lacked the `release` label "
     "Prometheus selects, so Grafana was never scraped (a true fault the Helm source hid)"),
    ("COL302", "dcgm-exporter/servicemonitor.monitoring.dcgm-exporter.yaml",
     "annotate ServiceMonitor SkipDryRunOnMissingResource=true: its CRD comes from kube-prometheus-stack, and "
     "gitops-engine reads the option only on the object"),
    ("COL300", "kube-prometheus-stack/customresourcedefinition.prometheuses.monitoring.coreos.com.yaml",
     "annotate CustomResourceDefinition Prune=false,Delete=false and IgnoreExtraneous: removing a CRD deletes "
     "every object of its kind"),
    ("COL300", "training-operator-upstream/customresourcedefinition.tfjobs.kubeflow.org.yaml",
     "annotate CustomResourceDefinition as above: pruning the TFJob CRD deletes every TFJob"),
    ("COL303", "kube-prometheus-stack/customresourcedefinition.prometheuses.monitoring.coreos.com.yaml",
     "the Application syncs with ServerSideApply=true (the rule reads it from the Application)"),
    ("SCHEMA", "kube-prometheus-stack/prometheus.monitoring.kube-prometheus-stack-prometheus.yaml",
     "rule data: every kind of the vendored CRDs now has its strict schema (scripts/gen_schemas.py "
     "VENDORED_CRDS); there was none for Prometheus"),
    ("SCHEMA", "kube-prometheus-stack/alertmanager.monitoring.kube-prometheus-stack-alertmanager.yaml",
     "rule data: as above, for Alertmanager"),
]

#: (rule, file under dist/apps/, reason) of every finding accepted by a colocate.io/ignore annotation.
ACCEPTED = [
    ("COL506", "kube-prometheus-stack/secret.monitoring.alertmanager-kube-prometheus-stack-alertmanager.yaml",
     "the Alertmanager configuration, routing only, whose receivers read their URLs and tokens from files of a "
     "Secret created out of band"),
]


@pytest.fixture(scope="module")
def result():
    return checker.check([DIST])


def _on_rendered(findings) -> list:
    return [f for f in findings if any(f"/dist/apps/{folder}/" in f.file for folder in RENDERED)]


@pytest.mark.parametrize("rule,file,verdict", FIXED, ids=[f"{r}-{f.split('/')[-1]}" for r, f, _ in FIXED])
def test_fixed_findings_are_gone(result, rule, file, verdict):
    assert verdict
    if rule == "COL008":
        assert not (DIST / "apps" / file).exists(), "the test Pod is rendered again"
    else:
        assert (DIST / "apps" / file).is_file(), f"{file} is no longer rendered: update this verdict"
    assert not [f for f in result.findings if f.rule == rule and f.file.endswith(f"/dist/apps/{file}")]


def test_every_accepted_finding_has_its_reason_here(result):
    accepted = sorted((f.rule, f.file.split("/dist/apps/")[1], reason) for f, reason in result.suppressed
                      if any(f"/dist/apps/{folder}/" in f.file for folder in RENDERED))
    assert accepted == sorted(ACCEPTED)


def test_no_error_on_any_rendered_object(result):
    errors = [f"{f.rule} {f.file}: {f.message}" for f in _on_rendered(result.findings) if f.severity == "error"]
    assert errors == []


def test_the_rendered_objects_are_judged_like_ours(result):
    """The pod rules read the rendered workloads: each of these is a checked object, not skipped."""
    assert result.objects > 250
    files = {f.file for f in result.findings + [f for f, _ in result.suppressed]}
    assert any("/dist/apps/kube-prometheus-stack/" in f for f in files)

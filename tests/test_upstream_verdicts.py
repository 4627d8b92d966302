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
    ("COL013", "kube-prometheus-stack/daemonset.monitoring.kube-prometheus-stack-prometheus-node-exporter.yaml",
     "values prometheus-node-exporter.resources (kube-prometheus v0.13.0's figures): no requests gave it cpu.shares 2 "
     "on every node where training bursts"),
    ("COL013", "kube-prometheus-stack/deployment.monitoring.kube-prometheus-stack-grafana.yaml",
     "values grafana.sidecar.resources (the grafana chart's suggested figures) for the two k8s-sidecar containers"),
    ("COL013", "kube-prometheus-stack/job.monitoring.kube-prometheus-stack-admission-create.yaml",
     "values prometheusOperator.admissionWebhooks.patch.resources for the certificate Jobs"),
    ("COL013", "kube-prometheus-stack/job.monitoring.kube-prometheus-stack-admission-patch.yaml",
     "values prometheusOperator.admissionWebhooks.patch.resources, as above"),
    ("COL013", "nvidia-device-plugin/daemonset.kube-system.nvidia-device-plugin.yaml",
     "values resources of the nvidia-device-plugin chart (none upstream)"),
    ("COL013", "training-operator-upstream/deployment.kubeflow.training-operator.yaml",
     "the overlay's Deployment patch (charts/training_operator.py): requests, and the monitoring pool"),
    ("SCHEMA", "kube-prometheus-stack/prometheus.monitoring.kube-prometheus-stack-prometheus.yaml",
     "rule data: every kind of the vendored CRDs now has its strict schema (scripts/gen_schemas.py "
     "VENDORED_CRDS); there was none for Prometheus"),
    ("SCHEMA", "kube-prometheus-stack/alertmanager.monitoring.kube-prometheus-stack-alertmanager.yaml",
     "rule data: as above, for Alertmanager"),
]

#: (rule, file under dist/apps/, reason) of every finding accepted by a colocate.io/ignore annotation
#: (added after rendering: charts/monitoring.py ACCEPTED_FINDINGS, and the chart's
#: alertmanager.secret.annotations value for the Secret). Nothing else on the rendered objects is
#: suppressed; the verdicts that led here are in tests/test_upstream_promql_verdicts.py.
URL_LEGEND = ("client-go's rest_client metrics carry host, not url, so the panel draws one series per verb "
              "with an empty url in its legend, and chart 55.5.1 cannot switch this dashboard off alone")
SWAP = "the chart's own cAdvisor relabeling drops container_memory_swap, so one column of the Memory Quota table stays empty"
KPS = "kube-prometheus-stack/"
ACCEPTED = [
    ("COL506", KPS + "secret.monitoring.alertmanager-kube-prometheus-stack-alertmanager.yaml",
     "the Alertmanager configuration, routing only, whose receivers read their URLs and tokens from files of a "
     "Secret created out of band"),
    ("COL202", KPS + "configmap.monitoring.kube-prometheus-stack-controller-manager.yaml", URL_LEGEND),
    ("COL202", KPS + "configmap.monitoring.kube-prometheus-stack-proxy.yaml", URL_LEGEND),
    ("COL202", KPS + "configmap.monitoring.kube-prometheus-stack-scheduler.yaml", URL_LEGEND),
    ("COL202", KPS + "configmap.monitoring.kube-prometheus-stack-kubelet.yaml", URL_LEGEND),
    ("COL200", KPS + "configmap.monitoring.kube-prometheus-stack-scheduler.yaml",
     "the Scheduling Rate and latency queries A, B and D read scheduler_e2e_*, binding and volume-scheduling metrics "
     "gone by kube-scheduler 1.28, query C works and the scheduler is scraped"),
    ("COL200", KPS + "configmap.monitoring.kube-prometheus-stack-kubelet.yaml",
     "two dead panels of a live dashboard, storage_operation_errors_total and kubelet_node_config_error (Dynamic "
     "Kubelet Config) are gone by 1.28"),
    ("COL202", KPS + "configmap.monitoring.kube-prometheus-stack-k8s-coredns.yaml",
     "the Cache (hitrate) panel groups coredns_cache_misses_total by type, which it does not carry, so the misses "
     "line has no type in its legend"),
    ("COL200", KPS + "configmap.monitoring.kube-prometheus-stack-k8s-resources-namespace.yaml", SWAP),
    ("COL200", KPS + "configmap.monitoring.kube-prometheus-stack-k8s-resources-pod.yaml", SWAP),
    ("COL200", KPS + "prometheusrule.monitoring.kube-prometheus-stack-k8s.rules.container-memory-swap.yaml",
     "the chart's own cAdvisor relabeling drops container_memory_swap, and switching the group off would move the "
     "finding to the node dashboard that reads this record"),
    ("COL200", KPS + "configmap.monitoring.kube-prometheus-stack-grafana-overview.yaml",
     "grafana_alerting_result_total counts legacy alerting, off by default in Grafana 10, so the Firing Alerts panel "
     "shows nothing"),
    ("COL202", KPS + "prometheusrule.monitoring.kube-prometheus-stack-node.rules.yaml",
     "node-exporter series carry no node label, so node:node_cpu_utilization:ratio_rate5m groups by cluster only "
     "(a relabeling that adds node is a follow-up)"),
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
    accepted = {(f.rule, f.file.split("/dist/apps/")[1], reason) for f, reason in result.suppressed
                if any(f"/dist/apps/{folder}/" in f.file for folder in RENDERED)}
    assert accepted == set(ACCEPTED)


def test_no_error_on_any_rendered_object(result):
    errors = [f"{f.rule} {f.file}: {f.message}" for f in _on_rendered(result.findings) if f.severity == "error"]
    assert errors == []


def test_the_rendered_objects_are_judged_like_ours(result):
    """The pod rules read the rendered workloads: each of these is a checked object, not skipped."""
    assert result.objects > 250
    files = {f.file for f in result.findings + [f for f, _ in result.suppressed]}
    assert any("/dist/apps/kube-prometheus-stack/" in f for f in files)

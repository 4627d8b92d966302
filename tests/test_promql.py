"""PromQL extraction and analysis against the metric catalog (colocate/promql.py), and the
acceptance case through the real CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from colocate import checker, config, promql
from colocate.checker.context import make_context
from colocate.checker.manifests import Doc
from tests.helpers import colocate, yaml_load

FIXTURES = Path(__file__).parent / "policies" / "fixtures"


def _rule_object(*rules: dict, name: str = "rules") -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": name, "namespace": "monitoring", "labels": {"release": "kube-prometheus-stack"},
                         "annotations": {"argocd.argoproj.io/sync-options": "SkipDryRunOnMissingResource=true"}},
            "spec": {"groups": [{"name": "g", "rules": list(rules)}]}}


def _dashboard(dashboard: dict, key: str = "d.json", labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "dash", "namespace": "monitoring",
                         "labels": {"grafana_dashboard": "1"} if labels is None else labels},
            "data": {key: json.dumps(dashboard), "README.md": "not json {"}}


def _docs(*objs: dict) -> list[Doc]:
    return [Doc("mem.yaml", 1, obj) for obj in objs]


def _index(*objs: dict) -> checker.Index:
    docs = _docs(*objs)
    return checker.Index(docs, make_context(config.load().cluster, docs))


def _findings(rule_id: str, *objs: dict) -> list[str]:
    rule = next(r for r in checker.load_rules() if r.id == rule_id)
    return [f"{f.field}: {f.message}" for f in checker.evaluate([rule], _index(*objs))]


# --- the catalog -------------------------------------------------------------------------

def test_catalog_is_loaded_once():
    assert promql.catalog() is promql.catalog()


def test_histograms_expand_to_bucket_sum_and_count_and_only_the_bucket_has_le():
    metrics = promql.catalog().metrics
    assert "workqueue_work_duration_seconds" not in metrics
    assert "le" in metrics["workqueue_work_duration_seconds_bucket"].labels
    for suffix in ("_sum", "_count"):
        assert "le" not in metrics["workqueue_work_duration_seconds" + suffix].labels


def test_summaries_keep_the_base_name_with_quantile():
    metrics = promql.catalog().metrics
    assert "quantile" in metrics["go_gc_duration_seconds"].labels
    assert "quantile" not in metrics["go_gc_duration_seconds_count"].labels


def test_metric_labels_include_the_scrape_job_target_labels():
    metrics = promql.catalog().metrics
    cadvisor = metrics["container_cpu_usage_seconds_total"].labels
    assert {"container", "image", "node", "metrics_path", "job", "instance"} <= cadvisor
    assert "node" not in metrics["node_cpu_seconds_total"].labels  # node-exporter has no node label
    assert metrics["ALERTS"].labels is None  # every label of the alert
    assert metrics["kube_pod_labels"].has_label("label_training_kubeflow_org_job_name")


@pytest.mark.parametrize("name, expected", [
    ("kube_pod_container_resource_requests_cpu_cores",
     'removed in kube-state-metrics v2.0.0; use kube_pod_container_resource_requests{resource="cpu",unit="core"}'),
    ("kube_node_status_allocatable_cpu_cores", 'use kube_node_status_allocatable{resource="cpu",unit="core"}'),
    ("kube_hpa_spec_max_replicas", "use kube_horizontalpodautoscaler_spec_max_replicas"),
    ("container_cpu_cfs_throttled_seconds_total", "never stored: dropped by KPS 55.5.1"),
    ("kube_pod_scheduler", "not in the pinned exporter versions"),
    ("kube_pod_status_phasee", "closest catalog name: kube_pod_status_phase"),
    ("workqueue_work_duration_seconds", "is a histogram; query workqueue_work_duration_seconds_bucket"),
    ("zz_nothing_like_it", "no similar name in the catalog"),
])
def test_unknown_names_are_explained_with_the_replacement(name, expected):
    catalog = promql.catalog()
    assert expected in catalog.explain_unknown(name, catalog.metrics)


# --- Grafana variables -------------------------------------------------------------------

@pytest.mark.parametrize("expr, expected", [
    ('rate(x{node=~"$node"}[$__rate_interval])', 'rate(x{node=~"__grafana_var_node"}[5m])'),
    ('rate(x{node=~"${node:regex}"}[${__interval}])', 'rate(x{node=~"__grafana_var_node"}[5m])'),
    ('rate(x{node="[[node]]"}[$interval])', 'rate(x{node="__grafana_var_node"}[5m])'),
    ("sum by ($label) (x offset $__range)", "sum by (__grafana_var_label) (x offset 5m)"),
    ("max_over_time(x[$__range:$__interval])", "max_over_time(x[5m:5m])"),
    ("x > $__range_s and x < $__interval_ms", "x > 300 and x < 300000"),
    ('x{a="\\"$v\\""}', 'x{a="\\"__grafana_var_v\\""}'),
])
def test_grafana_variables_are_substituted_by_context(expr, expected):
    assert promql.substitute_variables(expr) == expected
    assert not promql.analyse(expected).error


@pytest.mark.parametrize("query, expected", [
    ("label_values(kube_node_info{role=~\"$r\"}, node)", 'count by (node) (kube_node_info{role=~"$r"})'),
    ("label_values(node)", ""),
    ("label_names()", ""),
    ("metrics(node_.*)", ""),
    ("query_result(topk(3, up))", "topk(3, up)"),
    ("up{job=\"kubelet\"}", "up{job=\"kubelet\"}"),
])
def test_variable_queries_yield_their_promql(query, expected):
    assert promql.variable_query(query) == expected


# --- extraction --------------------------------------------------------------------------

def test_rule_queries_name_the_group_position_and_the_alert_or_record():
    obj = _rule_object({"record": "a:b:sum", "expr": "sum(up)"},
                       {"alert": "Down", "expr": "up == 0", "labels": {"severity": "warning"}})
    found = [(q.field, q.where, q.expr) for q in promql.queries(_docs(obj))]
    assert found == [("spec.groups[0].rules[0].expr", 'record "a:b:sum"', "sum(up)"),
                     ("spec.groups[0].rules[1].expr", 'alert "Down"', "up == 0")]


def test_dashboard_queries_cover_panels_rows_legacy_rows_and_query_variables():
    board = {
        "title": "T",
        "panels": [
            {"title": "Top", "targets": [{"refId": "A", "expr": "up[$__rate_interval]"}]},
            {"type": "row", "title": "R", "panels": [
                {"title": "Nested", "datasource": {"type": "prometheus", "uid": "${datasource}"},
                 "targets": [{"expr": "sum(up)"}, {"refId": "B", "expr": ""}]}]},
            {"title": "Logs", "datasource": {"type": "loki", "uid": "loki"}, "targets": [{"refId": "A", "expr": "{app=\"x\"}"}]},
        ],
        "rows": [{"panels": [{"title": "Legacy", "targets": [{"refId": "C", "expr": "up"}]}]}],
        "templating": {"list": [
            {"type": "datasource", "name": "datasource", "query": "prometheus"},
            {"type": "query", "name": "node", "query": {"query": "label_values(kube_node_info, node)"}},
            {"type": "custom", "name": "c", "query": "a,b"},
        ]},
    }
    found = [(q.field, q.where, q.expr) for q in promql.queries(_docs(_dashboard(board)))]
    assert found == [
        ('data.d.json panels[0] "Top" targets[A].expr', 'dashboard "T" panel "Top" query A', "up[5m]"),
        ('data.d.json panels[1].panels[0] "Nested" targets[0].expr', 'dashboard "T" panel "Nested" query 0', "sum(up)"),
        ('data.d.json rows[0].panels[0] "Legacy" targets[C].expr', 'dashboard "T" panel "Legacy" query C', "up"),
        ('data.d.json templating.list[1] "node" query', 'dashboard "T" variable "node"',
         "count by (node) (kube_node_info)"),
    ]


def test_dashboards_without_the_sidecar_label_are_read_too_and_other_json_is_not():
    """An unlabelled dashboard is still checked (COL221 says Grafana will not load it); JSON that
    is not a dashboard (no panels or rows) is no dashboard."""
    board = {"title": "T", "panels": [{"title": "P", "targets": [{"refId": "A", "expr": "nope("}]}]}
    assert [q.expr for q in promql.queries(_docs(_dashboard(board, labels={"app": "x"})))] == ["nope("]
    assert list(promql.queries(_docs(_dashboard({"settings": {"expr": "x"}}, labels={"app": "x"})))) == []


# --- parsing -----------------------------------------------------------------------------

def test_analysis_collects_selectors_with_matchers_and_names_given_by_matcher():
    analysis = promql.analyse('rate(a{x="1",y!~"z"}[5m]) / on (x) {__name__="b", x="2"} + sum by (x) (c offset 1m)')
    assert [str(s) for s in analysis.selectors] == ['a{x="1",y!~"z"}', 'b{x="2"}', "c"]


def test_syntax_errors_carry_the_parser_message():
    assert promql.analyse("sum(rate(x[5m])").error == "unclosed left parenthesis"
    assert "Prometheus 3" in promql.analyse('x{a="1" or b="2"}').error


@pytest.mark.parametrize("op, value, accepts_empty", [
    ("!=", "", False), ("=", "tensorflow", False), ("=~", ".+", False), ("!~", "|POD", False),
    ("=", "", True), ("!=", "POD", True), ("=~", ".*", True), ("=~", "(", None),
])
def test_matches_empty(op, value, accepts_empty):
    assert promql.matches_empty(op, value) is accepts_empty


# --- label flow and recording rules ------------------------------------------------------

@pytest.mark.parametrize("expr, labels", [
    ("sum by (node, resource) (kube_node_status_allocatable)", {"node", "resource"}),
    ("sum(up)", set()),
    ("1 - avg by (instance) (rate(node_cpu_seconds_total[5m]))", {"instance"}),
    ("a_total / b_total", None),
    ("a_total / on (node) b_total", {"node"}),
    ("sum by (node) (kube_node_info) / on (node) sum by (node, x) (kube_node_info)", {"node"}),
    ("kube_pod_info * on (namespace, pod) group_left (phase) kube_pod_status_phase",
     promql.catalog().metrics["kube_pod_info"].labels | {"phase"}),
    ('label_replace(sum by (Hostname) (DCGM_FI_DEV_GPU_UTIL), "node", "$1", "Hostname", "(.*)")', {"Hostname", "node"}),
    ("histogram_quantile(0.9, sum by (le, name) (rate(workqueue_work_duration_seconds_bucket[5m])))", {"name"}),
    ('absent(up{job="x"})', {"job"}),
    ("sum without (cpu, mode) (node_cpu_seconds_total)",
     promql.catalog().metrics["node_cpu_seconds_total"].labels - {"cpu", "mode"}),
])
def test_output_labels(expr, labels):
    result = promql.output_labels(promql.analyse(expr).ast, promql.catalog().metrics)
    assert result == (None if labels is None else frozenset(labels))


def test_recording_rules_are_metrics_with_the_labels_they_keep_even_when_chained():
    obj = _rule_object({"record": "node:req:ratio", "expr": "sum by (node) (kube_pod_container_resource_requests)",
                        "labels": {"pool": "mixed"}},
                       {"record": "pool:req:max", "expr": "max by (pool) (node:req:ratio)"},
                       {"record": "node:unknown:sum", "expr": "sum by (node) (not_a_metric) * on (node) node:req:ratio"})
    recorded = promql.recorded_metrics(_docs(obj))
    assert recorded["node:req:ratio"].labels == {"node", "pool"}
    assert recorded["pool:req:max"].labels == {"pool"}
    assert recorded["node:unknown:sum"].labels == {"node"}


def test_a_recording_rule_makes_its_name_known_to_alerts_in_other_objects():
    record = _rule_object({"record": "node:busy:ratio", "expr": "1 - avg by (instance) (rate(node_cpu_seconds_total[5m]))"},
                          name="records")
    alert = _rule_object({"alert": "Busy", "expr": "node:busy:ratio > 0.85", "for": "5m"}, name="alerts")
    assert _findings("COL200", record, alert) == []
    assert "node:busy:ratio is not exposed by any pinned exporter" in _findings("COL200", alert)[0]


# --- the checks --------------------------------------------------------------------------

def test_unknown_metric_and_syntax_error_findings_name_rule_and_field():
    obj = _rule_object({"alert": "Seed", "expr": "sum(kube_pod_container_resource_requests_cpu_cores) > 1"},
                       {"alert": "Broken", "expr": "sum(up"})
    findings = _findings("COL200", obj)
    assert findings[0].startswith('spec.groups[0].rules[0].expr: ') and 'alert "Seed": ' in findings[0]
    assert 'use kube_pod_container_resource_requests{resource="cpu",unit="core"}' in findings[0]
    assert findings[1].startswith("spec.groups[0].rules[1].expr: ")
    assert 'alert "Broken": syntax error: unclosed left parenthesis' in findings[1]


def test_a_grafana_variable_is_neither_a_syntax_error_nor_an_unknown_metric():
    board = {"title": "T", "panels": [{"title": "P", "targets": [
        {"refId": "A", "expr": 'sum by ($group) (rate(container_cpu_usage_seconds_total{container!="",node=~"$node"}[$__rate_interval]))'},
        {"refId": "B", "expr": "[[metric]]"}]}]}
    for rule in ("COL200", "COL201", "COL202"):
        assert _findings(rule, _dashboard(board)) == []


def test_container_filter_warning_skips_network_series_and_machine_series():
    obj = _rule_object({"record": "a:b:c", "expr": "sum(rate(container_network_receive_bytes_total[5m])) + sum(machine_cpu_cores)"},
                       {"record": "a:b:d", "expr": "sum(container_memory_rss)"})
    assert [f.split(":")[0] for f in _findings("COL201", obj)] == ["spec.groups[0].rules[1].expr"]


def test_label_check_flags_removed_cadvisor_labels_with_the_replacement():
    obj = _rule_object({"record": "a:b:c", "expr": 'sum by (pod_name) (container_memory_rss{container!="",container_name="tf"})'})
    found = _findings("COL202", obj)
    assert any('carries label "container_name" (use container), so the matcher container_name="tf" selects nothing' in f
               for f in found)
    assert any('no series of its input carries label "pod_name" (use pod)' in f for f in found)


@pytest.mark.parametrize("expr", [
    'sum by (node) (kube_pod_container_resource_requests{resource="cpu",unit="core"}) / on (node) group_left '
    'sum by (node) (kube_node_status_allocatable{resource="cpu",unit="core"})',
    'sum by (namespace) (kube_pod_status_phase{phase="Pending"} * on (namespace, pod) group_left (owner_kind) kube_pod_owner)',
    'count by (phase) (kube_pod_status_phase == 1) or vector(0)',
    'max_over_time(sum by (node) (rate(container_cpu_usage_seconds_total{container!=""}[5m]))[1h:5m])',
    'avg by (Hostname, gpu, UUID) (DCGM_FI_DEV_GPU_UTIL)',
    'time() - max by (namespace, pod) (kube_pod_created)',
    'sum by (framework) (increase(training_operator_jobs_failed_total[1h])) > bool 0',
    'ALERTS{alertname="NodeCPUHigh", alertstate="firing", node="x"}',
    'sum by (label_role) (kube_node_labels)',
])
def test_realistic_queries_raise_no_label_warning(expr):
    assert _findings("COL202", _rule_object({"record": "a:b:c", "expr": expr})) == []


def test_no_promql_object_means_the_catalog_is_never_loaded():
    promql.catalog.cache_clear()
    try:
        tfjobs = [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": f"j{i}", "namespace": "training"},
                   "spec": {}} for i in range(200)]
        for rule in ("COL200", "COL201", "COL202", "COL203"):
            assert _findings(rule, *tfjobs) == []
        assert promql.catalog.cache_info().currsize == 0
    finally:
        promql.catalog()


# --- acceptance, through the installed CLI (real kubeconform) ----------------------------

def test_cli_rejects_a_removed_kube_state_metrics_name_and_suggests_the_v2_name(tmp_path):
    rule = yaml_load((FIXTURES / "COL200" / "fail.removed-metric.yaml").read_text())
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rule))
    proc = colocate("check", str(path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(text.strip() for text in proc.stdout.splitlines() if text.strip().startswith("ERROR COL200 "))
    assert "PrometheusRule/monitoring/seed-alerts: spec.groups[0].rules[0].expr (line " in line
    assert 'alert "TrainingCPURequestsHigh"' in line
    assert 'use kube_pod_container_resource_requests{resource="cpu",unit="core"}' in line
    assert "0 invalid, 0 errors, 0 skipped" in proc.stdout


def test_cli_names_the_rule_and_the_panel_of_a_syntax_error():
    proc = colocate("check", str(FIXTURES / "COL200" / "fail.syntax-rule.yaml"),
                    str(FIXTURES / "COL200" / "fail.syntax-panel.yaml"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [text.strip() for text in proc.stdout.splitlines() if text.strip().startswith("ERROR COL200 ")]
    assert any('alert "NodeCPUHigh": syntax error: unclosed left parenthesis' in e for e in errors)
    assert any('data.broken.json panels[0] "GPU utilisation" targets[A].expr' in e
               and 'panel "GPU utilisation" query A: syntax error' in e for e in errors)

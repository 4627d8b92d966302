"""COL202 and COL201 with PromQL's own semantics, COL221 on every dashboard packaging. The
queries are short excerpts written for these tests in the style of kubernetes-mixin (the rules
and dashboards kube-prometheus-stack 55.5.1 ships), each reproducing a false alarm that is gone,
next to the true finding that stays."""
from __future__ import annotations

import json

import pytest
import yaml

from colocate import checker


def _rule(expr: str) -> dict:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "excerpt", "namespace": "monitoring", "labels": {"release": "kube-prometheus-stack"}},
            "spec": {"groups": [{"name": "g", "rules": [{"record": "excerpt:value:sum", "expr": expr}]}]}}


def _dashboard(expr: str, name: str = "dash", labels: dict | None = None) -> dict:
    board = {"title": "Excerpt", "uid": name, "panels": [
        {"type": "timeseries", "title": "P", "datasource": {"type": "prometheus", "uid": "prometheus"},
         "targets": [{"refId": "A", "expr": expr}]}]}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "monitoring", **({"labels": labels} if labels else {})},
            "data": {f"{name}.json": json.dumps(board)}}


def _check(tmp_path, *objs: dict, rule: str) -> list[str]:
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all(objs))
    return [f.message for f in checker.check([path]).findings if f.rule == rule]


def _col202(tmp_path, expr: str) -> list[str]:
    return _check(tmp_path, _rule(expr), rule="COL202")


# --- COL202: vector matching ----------------------------------------------------------------

def test_on_a_label_neither_side_carries_matches_and_is_not_reported(tmp_path):
    # "shard" is no grouping label: the empty value on both sides matches (signatureFunc)
    expr = ('kube_pod_container_resource_requests{resource="cpu"} * on (namespace, pod, shard) group_left () '
            'max by (namespace, pod) (kube_pod_status_phase{phase="Running"} == 1)')
    assert _col202(tmp_path, expr) == []


def test_on_a_label_only_one_side_carries_stays_and_says_which_series_can_match(tmp_path):
    expr = 'node_load1 * on (node) group_left () max by (node) (kube_pod_info)'
    (finding,) = _col202(tmp_path, expr)
    assert ('no series of the left side carries label "node" but the right side\'s do, so only right series '
            'without "node" can match') in finding


def test_group_left_of_a_label_the_one_side_lacks_says_the_result_loses_it(tmp_path):
    expr = 'kube_pod_info * on (namespace, pod) group_left (owner_kind) kube_pod_status_phase'
    (finding,) = _col202(tmp_path, expr)
    assert 'group_left (owner_kind): no series of the right side carries label "owner_kind"' in finding
    assert 'the result has no "owner_kind"' in finding


def test_by_on_a_label_no_input_series_carries_stays(tmp_path):
    # client-go's request histogram has host, not url (an old kubernetes-mixin dashboard query)
    expr = 'histogram_quantile(0.99, sum by (verb, url, le) (rate(rest_client_request_duration_seconds_bucket[5m])))'
    (finding,) = _col202(tmp_path, expr)
    assert 'sum by (verb, url, le): no series of its input carries label "url"' in finding
    assert 'groups as if "url" were not listed' in finding


# --- COL202: matchers -----------------------------------------------------------------------

def test_the_mixins_cluster_variable_matches_the_empty_value_and_is_not_reported(tmp_path):
    expr = 'sum by (namespace) (container_memory_working_set_bytes{cluster="$cluster", container!=""})'
    assert _check(tmp_path, _dashboard(expr, labels={"grafana_dashboard": "1"}), rule="COL202") == []


@pytest.mark.parametrize("matcher, effect", [
    ('cluster="prod"', 'the matcher cluster="prod" selects nothing'),
    ('pod_name!="POD"', 'the matcher pod_name!="POD" keeps every series (it filters nothing)'),
    ('pod_name=~"$pod"', 'the matcher pod_name=~"$pod" keeps every series when the variable\'s value matches ""'),
])
def test_a_matcher_on_a_label_no_series_carries_says_what_it_does(tmp_path, matcher, effect):
    expr = f'sum(container_memory_working_set_bytes{{container!="", {matcher}}})'
    (finding,) = _check(tmp_path, _dashboard(expr, labels={"grafana_dashboard": "1"}), rule="COL202")
    assert f'no series of container_memory_working_set_bytes carries label "{matcher.split("=")[0].rstrip("!")}"' in finding
    assert effect in finding


# --- COL201 ---------------------------------------------------------------------------------

def test_image_filter_counts_and_an_unfiltered_selector_still_warns(tmp_path):
    filtered = 'sum by (namespace, pod) (container_memory_rss{job="kubelet", metrics_path="/metrics/cadvisor", image!=""})'
    assert _check(tmp_path, _rule(filtered), rule="COL201") == []
    assert _check(tmp_path, _rule('sum by (namespace, pod) (container_memory_rss{job="kubelet"})'), rule="COL201")


def test_an_unfiltered_side_joined_on_container_with_a_filtered_one_passes(tmp_path):
    throttling = ('sum by (container, pod, namespace) (increase(container_cpu_cfs_throttled_periods_total{container!=""}[5m])) '
                  '/ sum by (container, pod, namespace) (increase(container_cpu_cfs_periods_total[5m])) > 0.25')
    assert _check(tmp_path, _rule(throttling), rule="COL201") == []
    ignoring = throttling.replace(") / sum", ") / ignoring (container) group_left sum")
    assert _check(tmp_path, _rule(ignoring), rule="COL201")


# --- COL221 ---------------------------------------------------------------------------------

def test_an_unlabelled_dashboard_is_checked_and_reported_as_not_provisioned(tmp_path):
    board = _dashboard("sum(kube_pod_info_typo)")
    (finding,) = _check(tmp_path, board, rule="COL221")
    assert "has no grafana_dashboard label, and no pod mounts it, so Grafana never loads it" in finding
    assert _check(tmp_path, board, rule="COL200"), "the unlabelled dashboard's queries are checked too"


def test_a_dashboard_mounted_into_a_pod_of_its_namespace_is_provisioned(tmp_path):
    mounted = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "grafana", "namespace": "monitoring"},
               "spec": {"selector": {"matchLabels": {"app": "g"}}, "template": {
                   "metadata": {"labels": {"app": "g"}},
                   "spec": {"containers": [{"name": "g", "image": "grafana/grafana:10.2.3"}],
                            "volumes": [{"name": "d", "configMap": {"name": "dash"}}]}}}}
    assert _check(tmp_path, _dashboard("sum(kube_pod_info)"), mounted, rule="COL221") == []
    elsewhere = json.loads(json.dumps(mounted))
    elsewhere["metadata"]["namespace"] = "tools"
    assert _check(tmp_path, _dashboard("sum(kube_pod_info)"), elsewhere, rule="COL221")


def test_a_sidecar_label_with_another_value_is_not_provisioned(tmp_path):
    (finding,) = _check(tmp_path, _dashboard("sum(kube_pod_info)", labels={"grafana_dashboard": "true"}), rule="COL221")
    assert 'has grafana_dashboard: "true", not "1"' in finding


@pytest.mark.parametrize("kind", ["ConfigMapList", "List"])
def test_dashboards_inside_a_list_are_checked_and_the_unlabelled_one_reported(tmp_path, kind):
    # kube-prometheus packages its dashboards as one ConfigMapList, unlabelled and mounted
    labelled = _dashboard("sum(kube_pod_info_typo)", name="labelled", labels={"grafana_dashboard": "1"})
    wrapper = {"apiVersion": "v1", "kind": kind, "items": [labelled, _dashboard("sum(kube_pod_info)", name="bare")]}
    assert any("kube_pod_info_typo" in f for f in _check(tmp_path, wrapper, rule="COL200"))
    (finding,) = _check(tmp_path, wrapper, rule="COL221")
    assert "holds dashboard JSON (bare.json) but has no grafana_dashboard label" in finding

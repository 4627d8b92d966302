from __future__ import annotations

import json

import cdk8s
import pytest

from colocate.mixin.dashboards import dashboard_uid
from colocate.constructs.grafana_dashboard import MAX_DATA_BYTES, GrafanaDashboard, GrafanaDashboardProps
from colocate.errors import PropError


def board(**overrides) -> dict:
    base = {
        "uid": dashboard_uid("Test"), "title": "Test", "schemaVersion": 38,
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
        "panels": [{"id": 1, "type": "timeseries", "title": "p", "gridPos": {"h": 8, "w": 12, "x": 0, "y": 0},
                    "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    "targets": [{"expr": "up", "refId": "A"}]}],
    }
    return {**base, **overrides}


def synth(dashboard: dict) -> dict:
    chart = cdk8s.Testing.chart()
    GrafanaDashboard(chart, "d", GrafanaDashboardProps(dashboard=dashboard, namespace="monitoring"))
    return cdk8s.Testing.synth(chart)[0]


def test_configmap_is_labelled_for_the_sidecar_minified_and_applied_server_side():
    cm = synth(board())
    assert cm["metadata"]["name"] == f"grafana-dashboard-{dashboard_uid('Test')}"
    assert cm["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert cm["metadata"]["annotations"] == {"argocd.argoproj.io/sync-options": "ServerSideApply=true"}
    (key, text), = cm["data"].items()
    assert key == f"{dashboard_uid('Test')}.json" and json.loads(text)["title"] == "Test" and " " not in text


def test_uid_is_stable_and_fits_grafana():
    assert dashboard_uid("Colocation") == dashboard_uid("Colocation") != dashboard_uid("Colocation 2")
    assert len(dashboard_uid("A very long dashboard title that goes on and on")) <= 40


def test_a_dashboard_over_one_mebibyte_is_refused():
    text = "x" * MAX_DATA_BYTES
    with pytest.raises(PropError) as err:
        synth(board(description=text))
    assert err.value.prop == "dashboard" and "split the dashboard" in err.value.reason


@pytest.mark.parametrize("overrides, prop, words", [
    ({"uid": ""}, "dashboard.uid", "stable"),
    ({"templating": {"list": []}}, "dashboard.templating", "datasource variable"),
    ({"panels": [{**board()["panels"][0], "datasource": {"type": "prometheus", "uid": "prometheus"}}]},
     "panels['p'].datasource", "not a fixed datasource"),
    ({"panels": [{**board()["panels"][0], "targets": [{"expr": "up", "refId": ""}]}]}, "panels['p'].targets",
     "must be set and unique"),
    ({"panels": [board()["panels"][0], board()["panels"][0]]}, "panels['p'].id", "unique integer"),
    ({"schemaVersion": 39}, "dashboard.schemaVersion", "newer than Grafana 10.2.3"),
    ({"schemaVersion": None}, "dashboard.schemaVersion", "newer than Grafana"),
])
def test_refuses_dashboards_grafana_would_show_wrong(overrides, prop, words):
    with pytest.raises(PropError) as err:
        synth(board(**overrides))
    assert err.value.prop == prop and words in err.value.reason

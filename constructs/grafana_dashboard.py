"""GrafanaDashboard: one dashboard as a ConfigMap that Grafana's dashboard sidecar loads.

The sidecar of kube-prometheus-stack picks up ConfigMaps labelled ``grafana_dashboard: "1"``
in its namespace. The JSON is minified under ``<uid>.json``. A ConfigMap's data is capped at
1 MiB; client-side apply also copies it into the 256 KiB last-applied annotation, so every
dashboard ConfigMap is applied server-side (docs/gitops.md).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from constructs import Construct

from colocate.errors import PropError
from colocate.constructs._k8s import emit
from colocate.model.validate import check_dns_label
from colocate.promql.grafana import dashboard_json, panels
from colocate.model.names import DASHBOARD_SIDECAR_LABEL as SIDECAR_LABEL, GRAFANA_SCHEMA_VERSION, GRAFANA_VERSION, SYNC_OPTIONS

#: Kubernetes refuses a ConfigMap whose data exceeds 1 MiB.
MAX_DATA_BYTES = 1024 * 1024
_UID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_DATASOURCE_UID = "${datasource}"


@dataclass(frozen=True)
class GrafanaDashboardProps:
    """Props of a GrafanaDashboard."""

    #: The dashboard: a grafana-foundation-sdk ``Dashboard`` model or its JSON dict. Needs a
    #: ``uid`` (stable, at most 40 characters) and Prometheus panels whose datasource is the
    #: ``datasource`` template variable.
    dashboard: Any
    #: Namespace Grafana's sidecar watches (``cluster.monitoring_namespace``).
    namespace: str


class GrafanaDashboard(Construct):
    """ConfigMap ``grafana-dashboard-<uid>`` with the minified dashboard JSON."""

    def __init__(self, scope: Construct, id: str, props: GrafanaDashboardProps):
        super().__init__(scope, id)
        self.props = props
        self.json = dashboard_json(props.dashboard)
        self.uid = str(self.json.get("uid") or "")
        self._validate()
        body = json.dumps(self.json, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        self._check_size(f"{self.uid}.json", body)
        emit(self, "configmap", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": props.namespace, "labels": {SIDECAR_LABEL: "1"},
                         "annotations": {SYNC_OPTIONS: "ServerSideApply=true"}},
            "data": {f"{self.uid}.json": body},
        })

    @property
    def name(self) -> str:
        return f"grafana-dashboard-{self.uid.lower()}"

    @property
    def _where(self) -> str:
        return f"GrafanaDashboard {self.json.get('title', '')!r}"

    def _validate(self) -> None:
        where = self._where
        check_dns_label(where, "namespace", self.props.namespace)
        if not _UID.match(self.uid):
            raise PropError(where, "dashboard.uid", f"{self.uid!r} must be 1-40 of [A-Za-z0-9_-] and stable, so "
                            "links and the sidecar's file name survive a re-synth")
        check_dns_label(where, "dashboard.uid", self.name)
        schema = self.json.get("schemaVersion")
        if not isinstance(schema, int) or schema > GRAFANA_SCHEMA_VERSION:
            raise PropError(where, "dashboard.schemaVersion", f"{schema!r} is newer than Grafana {GRAFANA_VERSION} "
                            f"understands ({GRAFANA_SCHEMA_VERSION}); build the dashboard for that version")
        variables = {v.get("name"): v for v in (self.json.get("templating") or {}).get("list") or []}
        if (variables.get("datasource") or {}).get("type") != "datasource":
            raise PropError(where, "dashboard.templating", "needs a datasource variable named 'datasource' "
                            "(type prometheus), so the dashboard works with any Prometheus datasource")
        ids: set[int] = set()
        for panel in panels(self.json):
            title = panel.get("title", "")
            if not isinstance(panel.get("id"), int) or panel["id"] in ids:
                raise PropError(where, f"panels[{title!r}].id", f"{panel.get('id')!r} must be a unique integer")
            ids.add(panel["id"])
            if not panel.get("gridPos"):
                raise PropError(where, f"panels[{title!r}].gridPos", "not set; give every panel a position")
            if (panel.get("datasource") or {}).get("uid") != _DATASOURCE_UID:
                raise PropError(where, f"panels[{title!r}].datasource", f"must be uid {_DATASOURCE_UID!r} "
                                "(the datasource variable), not a fixed datasource")
            refs = [t.get("refId") for t in panel.get("targets") or []]
            if not refs or not all(refs) or len(set(refs)) != len(refs):
                raise PropError(where, f"panels[{title!r}].targets", f"refIds {refs} must be set and unique "
                                "(the SDK defaults them to '')")

    def _check_size(self, key: str, body: str) -> None:
        size = len(key.encode()) + len(body.encode())
        if size > MAX_DATA_BYTES:
            raise PropError(self._where, "dashboard", f"the ConfigMap data is {size} bytes, over the {MAX_DATA_BYTES}-byte "
                            "limit Kubernetes enforces; split the dashboard into several")


def from_configmap(obj: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The dashboards of a sidecar ConfigMap (one per ``*.json`` data key)."""
    for key, text in sorted((obj.get("data") or {}).items()):
        if key.endswith(".json"):
            yield json.loads(text)

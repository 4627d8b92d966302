"""PromQL in our manifests, held against the catalog of metrics the pinned exporters expose.

* :mod:`.catalog` loads ``policies/metrics/catalog.yaml`` once (:func:`catalog`).
* :mod:`.queries` finds every expression in PrometheusRules and dashboard ConfigMaps.
* :mod:`.parse` parses one expression (:func:`analyse`).
* :mod:`.labels` follows labels through an expression (:func:`output_labels`,
  :func:`recorded_metrics`, :func:`label_problems`).

Used by the policy checks in ``policies/checks/promql.py``, the mixin and the DCGM exporter.
"""
from colocate.promql.grafana import VARIABLE, is_placeholder, substitute_variables, variable_query
from colocate.promql.catalog import CATALOG_PATH, Catalog, Metric, Removed, catalog, catalog_document
from colocate.promql.labels import label_problems, output_labels, recorded_metrics, scraped_metrics
from colocate.promql.parse import Analysis, Selector, analyse, matches_empty
from colocate.promql.queries import Query, dashboard_documents, is_dashboard, is_provisioned, is_rule_object, queries

__all__ = ["VARIABLE", "is_placeholder", "substitute_variables", "variable_query", "CATALOG_PATH", "Catalog",
           "Metric", "Removed", "catalog", "catalog_document", "label_problems", "output_labels",
           "recorded_metrics", "scraped_metrics", "Analysis", "Selector", "analyse", "matches_empty", "Query",
           "dashboard_documents", "is_dashboard", "is_provisioned", "is_rule_object", "queries"]

"""The colocation mixin: alerts, recording rules and dashboards from ONE object.

Like kubernetes-mixin: ``colocate/mixin/config.py`` configures every job selector, label name,
threshold and namespace once (``MixinConfig``); ``recording_rules.py``, ``alerts.py`` and
``dashboards.py`` and ``routing.py`` build from it; this class sums them. Consumers read
``alerts``, ``recording_rules``, ``rule_groups``, ``dashboards``, ``dcgm_fields()`` and
``alertmanager_config()``.
"""
from __future__ import annotations

from typing import Any, Iterator

from colocate.constructs.grafana_dashboard import dashboard_json
from colocate.mixin.alerts import Alerts
from colocate.mixin.config import PARSE_VALUES, MixinConfig, metric_names
from colocate.mixin.dashboards import Dashboards
from colocate.mixin.routing import Routing
from colocate.mixin.recording_rules import RecordingRules
from colocate.promql.grafana import expand_variables, panel_queries


class ColocationMixin(RecordingRules, Alerts, Dashboards, Routing):
    """Alerts, recording rules, dashboards and alert routing of the co-located cluster."""

    @property
    def rule_groups(self) -> list[dict[str, Any]]:
        return [{"name": "colocate.rules", "rules": self.recording_rules},
                {"name": "colocate.alerts", "rules": self.alerts}]

    def expressions(self) -> Iterator[str]:
        """Every PromQL expression the mixin ships, dashboard variables expanded."""
        for group in self.rule_groups:
            for rule in group["rules"]:
                yield rule["expr"]
        values = {**PARSE_VALUES, "pool": self.config.mixed_pool, "node": ".*"}
        for board in self.dashboards:
            for _, expr in panel_queries(dashboard_json(board)):
                yield expand_variables(expr, values)

    def dcgm_fields(self) -> list[str]:
        """Every ``DCGM_FI_*`` field the rules and dashboards read (the exporter must collect them)."""
        return sorted({n for e in self.expressions() for n in metric_names(e) if n.startswith("DCGM_FI_")})



def dcgm_fields(cluster: Any) -> list[str]:
    """DCGM fields the reference mixin of ``cluster`` uses; for the DCGM exporter's CSV."""
    return ColocationMixin(MixinConfig.from_cluster(cluster)).dcgm_fields()

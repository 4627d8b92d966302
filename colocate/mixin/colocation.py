"""The colocation mixin: alerts, recording rules, dashboards and alert routing from ONE config.

Like kubernetes-mixin: ``config.py`` configures every job selector, label name, threshold and
namespace once (``MixinConfig``); ``recording_rules.py``, ``alerts.py``, ``dashboards.py`` and
``routing.py`` each build their part from it; this module sums them, as data. Consumers
(``charts/observability.py``, ``charts/monitoring.py``, ``colocate report``) read ``alerts``,
``recording_rules``, ``rule_groups``, ``dashboards``, ``dcgm_fields()`` and
``alertmanager_config()``.
"""
from __future__ import annotations

from typing import Any, Iterator

from colocate.mixin.alerts import alerts
from colocate.mixin.config import PARSE_VALUES, MixinConfig, metric_names
from colocate.mixin.dashboards import dashboards
from colocate.mixin.recording_rules import recording_rules
from colocate.mixin.routing import ReceiverSecret, alertmanager_config
from colocate.mixin.slo import LatencyGuard
from colocate.promql.grafana import dashboard_json, expand_variables, panel_queries


class ColocationMixin:
    """Alerts, recording rules, dashboards and alert routing of the co-located cluster."""

    def __init__(self, config: MixinConfig):
        self.config = config
        self._guard = LatencyGuard(config)
        self.recording_rules: list[dict[str, Any]] = recording_rules(self._guard)
        self.alerts: list[dict[str, Any]] = alerts(self._guard)
        self.dashboards: list[Any] = dashboards(self._guard)

    @property
    def rule_groups(self) -> list[dict[str, Any]]:
        return [{"name": "colocate.rules", "rules": self.recording_rules},
                {"name": "colocate.alerts", "rules": self.alerts}]

    def alertmanager_config(self, secret: ReceiverSecret) -> dict[str, Any]:
        return alertmanager_config(self._guard, secret)

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

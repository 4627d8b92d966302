"""An online service's latency SLO: the histogram it exposes, the label that selects it, the P99
objective and the regression tolerated while training shares its nodes. Plain data, validated
like a construct's props; the mixin turns it into rules, alerts and dashboard rows."""
from __future__ import annotations

import re
from dataclasses import dataclass

from colocate.errors import PropError

_METRIC = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
#: Operators act when P99 jitter passes 10%.
DEFAULT_REGRESSION = 0.10


@dataclass(frozen=True)
class LatencySlo:
    """A P99 latency objective on a Prometheus histogram."""

    #: Histogram base name the service exposes, e.g. ``http_request_duration_seconds``
    #: (Prometheus stores ``<metric>_bucket`` with ``le``), in seconds.
    metric: str
    #: P99 objective in seconds, e.g. ``0.005``.
    objective_seconds: float
    #: Label and value that select the service's series. Default: ``job`` = the Service name,
    #: which is what our ServiceMonitor gives them (``""`` = the service's name).
    selector_label: str = "job"
    selector_value: str = ""
    #: P99 above the baseline by more than this share, while training runs on the service's
    #: nodes, alerts. Default 0.10 (10%).
    regression: float = DEFAULT_REGRESSION
    #: Path the service serves its metrics on, on its ``http`` port. Default ``/metrics``.
    path: str = "/metrics"

    def validate(self, where: str, prop: str = "slo") -> None:
        if not _METRIC.match(self.metric or "") or self.metric.endswith(("_bucket", "_sum", "_count")):
            raise PropError(where, f"{prop}.metric", f"{self.metric!r} must be a histogram's base name, e.g. "
                            "'http_request_duration_seconds' (without _bucket)")
        if not _LABEL.match(self.selector_label or ""):
            raise PropError(where, f"{prop}.selector_label", f"{self.selector_label!r} is not a Prometheus label name")
        if isinstance(self.objective_seconds, bool) or not isinstance(self.objective_seconds, (int, float)) \
                or not 0 < self.objective_seconds < 60:
            raise PropError(where, f"{prop}.objective_seconds", f"{self.objective_seconds!r} must be seconds "
                            "between 0 and 60, e.g. 0.005 for 5 ms")
        if isinstance(self.regression, bool) or not isinstance(self.regression, (int, float)) \
                or not 0 < self.regression <= 1:
            raise PropError(where, f"{prop}.regression", f"{self.regression!r} must be a share above 0 and at "
                            "most 1, e.g. 0.10 for 10%")
        if not self.path.startswith("/"):
            raise PropError(where, f"{prop}.path", f"{self.path!r} must start with '/'")

    def selector(self, service: str) -> tuple[str, str]:
        """(label, value) selecting ``service``'s series."""
        return self.selector_label, self.selector_value or service

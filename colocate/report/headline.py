"""``colocate report``: the co-location headline from a live Prometheus. Utilisation per pool, night
against day; P99 against its baseline per service while training ran beside it; preemptions;
GPU-hours delivered to training. It reads the colocation mixin's recording rules, so the figures
are the ones the dashboard and the alerts use (docs/report.md)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Optional
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from colocate.mixin import slo
from colocate.mixin.config import MixinConfig, eq, sel
from colocate.errors import ColocateError
from colocate.report.prometheus_api import Prometheus, Series
from colocate.mixin import records

_DURATION = re.compile(r"^([0-9]{1,9})([mhd])$")
_SECONDS = {"m": 60, "h": 3600, "d": 86400}
#: The longest --since and --step: ten years, longer than any Prometheus keeps samples.
LONGEST = 3650 * 86400
#: The --until colocate accepts: from the Unix epoch to the end of year 9999 (what a date prints).
LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc).timestamp()
#: (resource, what, query) of each utilisation figure; each is a share of the pool's allocatable.
UTILISATION = (
    ("cpu", "used", records.POOL_CPU_USED, ()),
    ("cpu", "requested", records.POOL_REQUESTS, (eq("resource", "cpu"),)),
    ("gpu", "used", records.POOL_GPU_USED, ()),
)
#: Victims the scheduler picked (kube-scheduler's STABLE histogram; its _sum counts them).
PREEMPTIONS = "scheduler_preemption_victims_sum"


def duration(text: str, option: str) -> int:
    m = _DURATION.match(text or "")
    if not m or int(m.group(1)) == 0:
        raise ColocateError(f"{option} {text!r}: give a duration such as 30m, 24h or 7d")
    seconds = int(m.group(1)) * _SECONDS[m.group(2)]
    if seconds > LONGEST:
        raise ColocateError(f"{option} {text!r}: at most {LONGEST // 86400}d")
    return seconds


def instant(text: str | None) -> float:
    """``--until``: RFC 3339 or unix seconds, from the epoch to year 9999; default now."""
    if not text:
        return datetime.now(timezone.utc).timestamp()
    try:
        when = float(text)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ColocateError(f"--until {text!r}: give RFC 3339 (2026-12-03T06:00:00Z) or unix seconds") from None
        when = (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()
    if not 0 <= when <= LATEST:  # NaN fails both
        raise ColocateError(f"--until {text!r}: give a time between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z")
    return when


def window(until: str | None, since: str) -> tuple[float, float]:
    """(start, end) of ``--since`` before ``--until``; one that would start before the epoch is bad input."""
    end = instant(until)
    start = end - duration(since, "--since")
    if start < 0:
        raise ColocateError(f"--since {since!r}: the window would start before 1970-01-01T00:00:00Z "
                            f"(--until is {iso(end)})")
    return start, end


@dataclass(frozen=True)
class Night:
    """Local hours that count as night: from ``start`` (inclusive) to ``end`` (exclusive), in ``zone``."""

    start: int
    end: int
    zone: str

    @classmethod
    def parse(cls, hours: str, zone: str) -> "Night":
        m = re.match(r"^(\d{1,2})-(\d{1,2})$", hours or "")
        if not m or not all(0 <= int(h) < 24 for h in m.groups()) or m.group(1) == m.group(2):
            raise ColocateError(f"--night {hours!r}: give local hours START-END, e.g. 22-6")
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ColocateError(f"--timezone {zone!r}: not a time zone name such as UTC or Asia/Shanghai") from None
        return cls(int(m.group(1)), int(m.group(2)), zone)

    def __contains__(self, t: float) -> bool:
        hour = datetime.fromtimestamp(t, ZoneInfo(self.zone)).hour
        return self.start <= hour < self.end if self.start < self.end else hour >= self.start or hour < self.end


def finite(value: Optional[float]) -> Optional[float]:
    """A figure past float's range (samples near 1e308 summed) is no data, as NaN and Inf are."""
    return value if value is not None and math.isfinite(value) else None


def mean(values: list[float]) -> Optional[float]:
    values = [v for v in values if not math.isnan(v)]
    return finite(sum(values) / len(values)) if values else None


@dataclass(frozen=True)
class PoolFigure:
    pool: str
    resource: str
    what: str
    night: Optional[float]
    day: Optional[float]


@dataclass(frozen=True)
class ServiceFigure:
    service: str
    namespace: str
    #: Mean P99 and baseline (seconds) over the samples when training ran on the service's nodes.
    p99: Optional[float]
    baseline: Optional[float]
    samples: int

    @property
    def change(self) -> Optional[float]:
        return None if self.p99 is None or not self.baseline else finite(self.p99 / self.baseline - 1)


@dataclass
class Headline:
    prometheus: str
    start: float
    end: float
    step: int
    night: Night
    pools: list[PoolFigure] = field(default_factory=list)
    services: list[ServiceFigure] = field(default_factory=list)
    preemptions: Optional[float] = None
    gpu_hours: Optional[float] = None
    #: What had no data, and why that may be.
    missing: list[str] = field(default_factory=list)


def integrate(samples: list[tuple[float, float]], step: int) -> float:
    """Value x seconds over consecutive samples (trapezoids; a gap longer than a step is no data)."""
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(samples, samples[1:]) if b[0] - a[0] <= step)


def build(prom: Prometheus, config: MixinConfig, *, start: float, end: float, step: int, night: Night) -> Headline:
    guard = slo.LatencyGuard(config)
    out = Headline(prom.url, start, end, step, night)
    def query(q: str) -> list[Series]:
        return prom.range(q, start, end, step)

    for resource, what, record, matchers in UTILISATION:
        series = query(f"sum by (pool) ({sel(record, *matchers)})")
        if not series:
            out.missing.append(f"{resource} {what} per pool: no samples of {record} (the colocate recording rules "
                               "must be loaded)")
        for s in sorted(series, key=lambda s: s.labels.get("pool", "")):
            out.pools.append(PoolFigure(s.labels.get("pool", ""), resource, what,
                                        mean([v for t, v in s.samples if t in night]),
                                        mean([v for t, v in s.samples if t not in night])))
    for svc in config.online_slos:
        labels = (eq("service", svc.service), eq("namespace", svc.namespace))
        p99, base, near = (_by_time(query(sel(record, *labels)))
                           for record in (slo.P99_RECORD, slo.BASELINE_RECORD, slo.TRAINING_PODS_RECORD))
        together = [t for t, n in near.items() if n > 0 and t in p99]
        if not p99:
            out.missing.append(f"P99 of {svc.service}: no samples of {slo.P99_RECORD}")
        out.services.append(ServiceFigure(svc.service, svc.namespace, mean([p99[t] for t in together]),
                                          mean([base[t] for t in together if t in base]), len(together)))
    victims = prom.instant(f"sum(increase({PREEMPTIONS}[{int(end - start)}s]))", end)
    if victims and victims[0].samples:
        out.preemptions = victims[0].samples[0][1]
    else:
        out.missing.append(f"preemptions: no samples of {PREEMPTIONS} (kube-scheduler is not scraped; on kubeadm "
                           "it listens on 127.0.0.1 unless --bind-address is changed)")
    gpus = query(guard.training_gpus)
    out.gpu_hours = finite(integrate(gpus[0].samples, step) / 3600) if gpus and gpus[0].samples else None
    if out.gpu_hours is None:
        out.missing.append("GPU-hours to training: no Running training pod held a GPU, or kube-state-metrics has no samples")
    if not out.pools and not any(s.p99 is not None for s in out.services) and out.gpu_hours is None \
            and out.preemptions is None:
        raise ColocateError(f"Prometheus at {prom.url} has no samples between {iso(start)} and {iso(end)} for "
                            "any figure; check --since/--until, and that the colocate rules are loaded")
    return out


def _by_time(series: list[Series]) -> dict[float, float]:
    return {t: v for s in series[:1] for t, v in s.samples}


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

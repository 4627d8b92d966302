"""Renderers of a ``colocate report`` Headline: text, Markdown and JSON over one model."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Callable, Optional

from colocate.base.text import escape, escape_lines, markdown
from colocate.report.headline import Headline, iso


def _pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ms(value: Optional[float]) -> str:
    return "-" if value is None else f"{value * 1000:.2f} ms"


def _signed(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _num(value: Optional[float], unit: str = "") -> str:
    return "no data" if value is None else f"{value:.1f}{unit}"


def _rows(h: Headline) -> tuple[list[list[str]], list[list[str]]]:
    pools = [[f.pool, f.resource, f.what, _pct(f.night), _pct(f.day)] for f in h.pools]
    services = [[s.service, _ms(s.p99), _ms(s.baseline), _signed(s.change), str(s.samples)] for s in h.services]
    return pools, services


_POOL_HEAD = ["pool", "resource", "", "night", "day"]
_SERVICE_HEAD = ["service", "P99 (training beside it)", "baseline", "change", "samples"]


def _window(h: Headline) -> str:
    n = h.night
    return (f"{iso(h.start)} to {iso(h.end)}, step {h.step}s, from {h.prometheus}; "
            f"night is {n.start:02d}:00-{n.end:02d}:00 {n.zone}")


def to_text(h: Headline) -> str:
    pools, services = _rows(h)
    lines = [f"colocate report: {_window(h)}", "", "Utilisation (share of each pool's allocatable)"]
    lines += _table([_POOL_HEAD] + pools)
    lines += ["", "Online P99 while training ran on the service's nodes"] + _table([_SERVICE_HEAD] + services)
    lines += ["", f"Training pods preempted: {_num(h.preemptions)}",
              f"GPU-hours delivered to training: {_num(h.gpu_hours)}"]
    lines += [f"note: {m}" for m in h.missing]
    return "\n".join(escape_lines(lines)) + "\n"


def _table(rows: list[list[str]]) -> list[str]:
    rows = [[escape(c) for c in r] for r in rows]  # labels come from Prometheus: widths of what is shown
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def to_markdown(h: Headline) -> str:
    pools, services = _rows(h)

    def table(head: list[str], rows: list[list[str]]) -> list[str]:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
            ["| " + " | ".join(map(markdown, r)) + " |" for r in rows]

    lines = ["## colocate report", "", markdown(_window(h)), "", "### Utilisation (share of each pool's allocatable)", ""]
    lines += table(_POOL_HEAD, pools)
    lines += ["", "### Online P99 while training ran on the service's nodes", ""] + table(_SERVICE_HEAD, services)
    lines += ["", f"- Training pods preempted: {_num(h.preemptions)}",
              f"- GPU-hours delivered to training: {_num(h.gpu_hours)}"]
    lines += [f"- note: {markdown(m)}" for m in h.missing]
    return "\n".join(lines) + "\n"


def to_json(h: Headline) -> str:
    data = asdict(h)
    data["services"] = [{**asdict(s), "change": s.change} for s in h.services]
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


FORMATS: dict[str, Callable[[Headline], str]] = {"text": to_text, "markdown": to_markdown, "json": to_json}

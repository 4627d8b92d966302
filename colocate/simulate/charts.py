"""The picture of a simulated day: allocation by hour per node pool, as Mermaid `xychart-beta`
blocks for a pull-request comment (GitHub renders them) and as a self-contained HTML page whose
charts matplotlib draws as inline SVG (docs/simulate.md "The day chart").

The input is one row per hour, pool and resource (PoolHour); the caller fills it from whatever it
observed. Both views draw the same series for each pool, in % of the pool's allocatable:
  bars    every tier's requests of the pool's key resource: GPU where the pool has GPUs, else CPU;
  lines   every tier's requests of its other resources (CPU, memory; one it has none of is left
          out), then the offline (training) tier's requests of the key resource: the part of the
          bar that training holds.
Bars are the total rather than the offline share because Mermaid draws a bar of 0 as a stub below
its 0 tick (the axis's outer padding), which would show training where there is none.
Output is deterministic: the same rows give the same bytes.

With a queue (queue_chart.QueueChart) both views add its chart after the pools', drawn by the
same code: a chart here is anything with hours, y_max, y_label, series() and legend().

matplotlib is imported only inside html(), so importing this module (and `colocate check`, which
never draws) does not pay for it.
"""
from __future__ import annotations

import html as _html
import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

#: The resources a row may carry, in the order the charts draw them, and their units.
RESOURCES = ("cpu", "memory", "gpu")
UNITS = {"cpu": "cores", "memory": "GiB", "gpu": "GPUs"}
#: The tier whose share the bars show.
OFFLINE = "offline"

#: (name, hex) of each series as a line, and of a resource as bars. Mermaid takes them as
#: plotColorPalette in drawing order, matplotlib as each series' colour, so the captions name them.
LINE_COLOURS = {"cpu": ("blue", "#2563eb"), "memory": ("green", "#16a34a"), "gpu": ("red", "#dc2626"),
                OFFLINE: ("purple", "#7e22ce")}
BAR_COLOURS = {"cpu": ("light blue", "#93c5fd"), "memory": ("light green", "#86efac"),
               "gpu": ("light red", "#fca5a5")}
LABELS = {"cpu": "CPU", "memory": "memory", "gpu": "GPU"}

DEFAULT_TITLE = "allocation by hour, % of allocatable"


class Chart(Protocol):
    """What both views draw: a PoolChart, or the queue's (queue_chart.QueueChart, which takes its
    colours from here, so this module names no chart of its own beyond the pools')."""
    hours: tuple[int, ...]
    y_label: ClassVar[str]

    @property
    def y_max(self) -> int: ...

    def series(self) -> list[tuple[str, str, tuple[float, ...]]]: ...

    def legend(self) -> list[tuple[str, str, str]]: ...


class TitledChart(Chart, Protocol):
    """A chart drawn after the pools' (the queue's): it brings its own title, the line under its
    Mermaid block, and its HTML caption."""
    title: ClassVar[str]
    about: ClassVar[str]
    caption: ClassVar[str]


@dataclass(frozen=True)
class PoolHour:
    """What one pool had placed on it at one hour step, for one resource."""
    hour: int            # 0..24, the hour step
    pool: str            # node pool name: online, mixed, monitoring
    resource: str        # "cpu" (cores), "memory" (GiB), "gpu" (GPUs)
    requested: Mapping[str, float]   # by tier ("online", "offline", ...): sum of pod requests placed on the pool's nodes
    allocatable: float   # sum of the pool's nodes' allocatable


@dataclass(frozen=True)
class PoolChart:
    """One pool's series, each a percentage per hour of ``hours``."""
    pool: str
    hours: tuple[int, ...]
    totals: dict[str, tuple[float, ...]]   # resource -> all tiers' requests, % of allocatable
    key: str                              # the bars' resource: "gpu" when the pool has GPUs, else "cpu"
    offline: tuple[float, ...]            # the offline tier's requests of the key resource, %
    y_label: ClassVar[str] = "% of allocatable"

    @property
    def y_max(self) -> int:
        """100, unless requests exceed allocatable somewhere (then the axis grows to show it)."""
        top = max([100.0, *self.offline, *(v for series in self.totals.values() for v in series)])
        return math.ceil(top)

    def series(self) -> list[tuple[str, str, tuple[float, ...]]]:
        """(kind, name, values) in drawing order: the key resource's bars, a line per other
        resource, and the offline line."""
        return ([("bar", self.key, self.totals[self.key])]
                + [("line", r, self.totals[r]) for r in RESOURCES if r in self.totals and r != self.key]
                + [("line", OFFLINE, self.offline)])

    def legend(self) -> list[tuple[str, str, str]]:
        """(colour name, hex, text) per series, in drawing order."""
        out = []
        for kind, name, _ in self.series():
            if kind == "bar":
                out.append((*BAR_COLOURS[name], f"bars: {LABELS[name]} requests, all tiers"))
            elif name == OFFLINE:
                out.append((*LINE_COLOURS[name], f"line: offline (training) {LABELS[self.key]} requests"))
            else:
                out.append((*LINE_COLOURS[name], f"line: {LABELS[name]} requests, all tiers"))
        return out


def _percent(requested: float, allocatable: float, where: str) -> float:
    if allocatable > 0:
        return 100.0 * requested / allocatable
    if requested > 0:
        raise ValueError(f"{where}: {requested} requested of an allocatable of 0")
    return 0.0


def pool_charts(rows: Sequence[PoolHour]) -> list[PoolChart]:
    """Validate the rows and compute each pool's series, pools in the order they first appear.

    The hours are every hour any row has. A resource is drawn for a pool when some row gives it an
    allocatable above 0; it must then have exactly one row for every hour."""
    if not rows:
        raise ValueError("no rows: nothing to chart")
    table: dict[str, dict[str, dict[int, PoolHour]]] = {}
    for row in rows:
        where = f"pool {row.pool!r} {row.resource} hour {row.hour}"
        if isinstance(row.hour, bool) or not isinstance(row.hour, int) or not 0 <= row.hour <= 24:
            raise ValueError(f"{where}: the hour must be an integer 0..24")
        if row.resource not in RESOURCES:
            raise ValueError(f"{where}: resource must be one of {', '.join(RESOURCES)}")
        if not math.isfinite(row.allocatable) or row.allocatable < 0:
            raise ValueError(f"{where}: allocatable {row.allocatable} is not a number >= 0")
        for tier, value in row.requested.items():
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{where}: requested[{tier!r}] {value} is not a number >= 0")
        by_hour = table.setdefault(row.pool, {}).setdefault(row.resource, {})
        if row.hour in by_hour:
            raise ValueError(f"{where}: two rows")
        by_hour[row.hour] = row
    hours = tuple(sorted({row.hour for row in rows}))
    charts = []
    for pool, resources in table.items():
        drawn = [r for r in RESOURCES if any(row.allocatable > 0 for row in resources.get(r, {}).values())]
        totals: dict[str, tuple[float, ...]] = {}
        offline: dict[str, tuple[float, ...]] = {}
        for resource, by_hour in resources.items():
            if resource not in drawn:
                for row in by_hour.values():   # still refuse requests of a resource the pool has none of
                    _percent(sum(row.requested.values()), 0, f"pool {pool!r} {resource} hour {row.hour}")
                continue
            missing = [h for h in hours if h not in by_hour]
            if missing:
                raise ValueError(f"pool {pool!r} {resource}: no row for hour(s) {', '.join(f'{h:02d}' for h in missing)}")
            totals[resource] = tuple(_percent(sum(by_hour[h].requested.values()), by_hour[h].allocatable,
                                              f"pool {pool!r} {resource} hour {h}") for h in hours)
            offline[resource] = tuple(_percent(by_hour[h].requested.get(OFFLINE, 0.0), by_hour[h].allocatable,
                                               f"pool {pool!r} {resource} hour {h}") for h in hours)
        if not drawn:
            raise ValueError(f"pool {pool!r}: every row has an allocatable of 0")
        key = "gpu" if "gpu" in totals else "cpu" if "cpu" in totals else drawn[0]
        charts.append(PoolChart(pool, hours, totals, key, offline[key]))
    return charts


# --- Mermaid ------------------------------------------------------------------------------------

#: Characters a double-quoted xychart string cannot show, and their look-alikes: its grammar ends
#: the string at the next `"` and has no escape; Mermaid passes the text through DOMPurify and
#: then sets it as plain text, so `&` would show as "&amp;" and a tag like <img> would vanish.
_MERMAID_LOOKALIKES = str.maketrans({'"': "'", "&": "+", "<": "\u2039", ">": "\u203a"})


def _mermaid_text(text: str) -> str:
    """A value for a double-quoted xychart string, on one line (a line break ends a statement)."""
    text = re.sub(r"[\x00-\x1f\x7f]+", " ", text).translate(_MERMAID_LOOKALIKES).strip()
    return text or "-"


def _number(value: float) -> str:
    """A count as itself (jobs), a percentage to a tenth."""
    return str(value) if isinstance(value, int) else f"{value:.1f}"


def _mermaid_chart(chart: Chart, title: str) -> str:
    palette = ", ".join(hex_ for _, hex_, _ in chart.legend())
    # The init directive (not front matter) so GitHub's Mermaid applies the palette too.
    lines = ['%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + palette + '"}}}}%%',
             "xychart-beta",
             f'    title "{_mermaid_text(title)}"',
             '    x-axis "hour" [' + ", ".join(f'"{h:02d}"' for h in chart.hours) + "]",
             f'    y-axis "{chart.y_label}" 0 --> {chart.y_max}']
    lines += [f"    {kind} [" + ", ".join(_number(v) for v in values) + "]" for kind, _, values in chart.series()]
    return "\n".join(lines)


def _caption(chart: Chart) -> str:
    return "; ".join(f"{colour} {text}" for colour, _, text in chart.legend())


def _mermaid_block(chart: Chart, title: str, about: str) -> str:
    """A ```mermaid block and a line under it saying which series is which (xychart-beta draws
    no legend)."""
    return f"```mermaid\n{_mermaid_chart(chart, title)}\n```\n\n*{about}, in order: {_caption(chart)}.*\n"


def mermaid(rows: Sequence[PoolHour], title: str = DEFAULT_TITLE, queue: TitledChart | None = None) -> str:
    """Markdown: per pool an xychart-beta block, x the hours, y % of allocatable; then the
    queue's, y jobs, when there is one."""
    out = [_mermaid_block(chart, f"{chart.pool}: {title}", f"Pool {_markdown_code(chart.pool)}, % of allocatable by hour")
           for chart in pool_charts(rows)]
    if queue is not None:
        out.append(_mermaid_block(queue, queue.title, queue.about))
    return "\n".join(out)


def _markdown_code(text: str) -> str:
    """Inline code that holds any text: a fence longer than its longest run of backticks."""
    text = re.sub(r"\s+", " ", text)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


# --- HTML ---------------------------------------------------------------------------------------

_STYLE = """
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 2em auto; max-width: 60em; color: #111827; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.5em; }
figure { margin: 0 0 1.5em 0; } figure svg { width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #374151; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #d1d5db; padding: 0.2em 0.6em; text-align: left; }
th { background: #f3f4f6; }
"""


def _svg(chart: Chart, index: int, name: str) -> str:
    """One chart as an inline <svg> labelled ``name``: matplotlib (imported here, not at module import), text
    as paths so no font is needed, fixed hash salt and no date, so the bytes repeat; every id is
    prefixed so several charts can share one page."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    with matplotlib.rc_context({"svg.hashsalt": f"colocate-chart-{index}", "svg.fonttype": "path",
                                "font.family": "DejaVu Sans", "font.size": 9, "axes.unicode_minus": False}):
        fig = Figure(figsize=(9, 3.4), layout="constrained")
        ax = fig.add_subplot()
        x = list(chart.hours)
        handles = []
        for (kind, _name, values), (_, colour, label) in zip(chart.series(), chart.legend()):
            if kind == "bar":
                handles.append(ax.bar(x, values, width=0.7, color=colour, label=label, zorder=2))
            else:
                handles += ax.plot(x, values, color=colour, label=label, linewidth=2, marker="o", markersize=3,
                                   zorder=3)
        ax.set_xlim(min(x) - 0.6, max(x) + 0.6)
        ax.set_ylim(0, chart.y_max)
        ax.set_xticks(x, [f"{h:02d}" for h in x])
        ax.set_xlabel("hour")
        ax.set_ylabel(chart.y_label)
        if all(isinstance(v, int) for _, _, values in chart.series() for v in values):
            ax.yaxis.set_major_locator(MaxNLocator(nbins="auto", integer=True))   # counts: no tick at half a job
        ax.grid(axis="y", color="#e5e7eb", zorder=0)
        # In drawing order, like the Mermaid caption (matplotlib would put the lines first).
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncols=2, frameon=False)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]   # no XML declaration or DOCTYPE inside HTML
    prefix = f"c{index}-"
    svg = re.sub(r'\bid="', f'id="{prefix}', svg)
    svg = re.sub(r'href="#', f'href="#{prefix}', svg)
    svg = svg.replace("url(#", f"url(#{prefix}")
    label = _html.escape(f"{name}: {_caption(chart)}", quote=True)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1)


def _figure(heading: str, svg: str, caption: str) -> str:
    esc = _html.escape
    return f"<h2>{esc(heading)}</h2>\n<figure>\n{svg}\n<figcaption>{esc(caption, quote=False)}</figcaption>\n</figure>"


def _table(title: str, header: list[str], rows: list[list[str]]) -> str:
    esc = _html.escape
    head = "".join(f"<th>{esc(str(cell))}</th>" for cell in header)
    body = "\n".join("<tr>" + "".join(f"<td>{esc(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<h2>{esc(title)}</h2>\n<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def html(rows: Sequence[PoolHour], title: str,
         tables: Sequence[tuple[str, list[str], list[list[str]]]] = (), queue: TitledChart | None = None) -> str:
    """A whole HTML page, self-contained: the per-pool charts as inline SVG, the queue's when
    there is one, then each table (title, header, rows). No rows, no pool charts: a scenario of
    named steps has no hours to draw. Its Content-Security-Policy forbids loading anything, so a
    browser makes no request for it."""
    esc = _html.escape
    pools = pool_charts(rows) if rows else []
    parts = [_figure(f"Pool {chart.pool}", _svg(chart, index, f"pool {chart.pool}"),
                     "Requests placed on the pool's nodes, in % of their allocatable, by hour.")
             for index, chart in enumerate(pools)]
    if queue is not None:
        parts.append(_figure("Queue", _svg(queue, len(pools), "queue"), queue.caption))
    parts += [_table(*table) for table in tables]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{esc(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n<h1>{esc(title)}</h1>\n"
            + "\n".join(parts) + "\n</body>\n</html>\n")

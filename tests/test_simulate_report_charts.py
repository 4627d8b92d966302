"""The charts of `colocate simulate --format markdown|html` (colocate/simulate/formats.py), from an
Observation made by hand: no simulation runs. tests/simulate/test_charts.py renders the charts
with the real tools (mmdc, Chromium)."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from colocate.simulate import formats
from colocate.simulate.charts import OFFLINE, PoolHour
from colocate.simulate.observe import Observation
from colocate.simulate.queue_chart import queue_chart
from colocate.simulate.steps import StepReport


def _step(hour: int) -> StepReport:
    """One hour of a one-pool cluster: 8 GPUs, training holds 6 of them at night."""
    night = hour < 7 or hour > 21
    return StepReport(f"{hour:02d}:00", online_desired=2, online_placed=2, training_running=6 if night else 0,
                      use=[PoolHour(hour, "mixed", "cpu", {"online": 4, OFFLINE: 12 if night else 0}, 32),
                           PoolHour(hour, "mixed", "memory", {"online": 16, OFFLINE: 96 if night else 0}, 256),
                           PoolHour(hour, "mixed", "gpu", {"online": 2, OFFLINE: 6 if night else 0}, 8)])


def test_a_scenario_of_named_steps_has_a_page_without_charts():
    steps = [StepReport("night", online_desired=2, online_placed=2), StepReport("peak", online_desired=4, online_placed=4)]
    page = formats.to_html(Observation("night", steps=steps, hourly=False))
    assert "<svg" not in page and "<td>peak</td>" in page
    markdown = formats.to_markdown(Observation("night", steps=steps, hourly=False))
    assert "```mermaid" not in markdown and "peak: online 4/4 placed" in markdown


def test_a_day_has_a_chart_per_pool():
    obs = Observation("day", steps=[_step(h) for h in range(25)], hourly=True)
    assert len(re.findall(r"```mermaid\n", formats.to_markdown(obs))) == 1
    assert formats.to_html(obs).count("<svg ") == 1


# --- the queue chart ----------------------------------------------------------------------------

#: Kueue's figures by hour, each series with several values so a wrong or shifted figure shows:
#: admitted fills the night and drops to 0 while the queue is held by day; waiting grows when a
#: job is merged at 10:00.
ADMITTED = [3, 3, 4, 4, 5, 5, 5, 5] + [0] * 14 + [3, 4, 4]
WAITING = [6, 6, 5, 5, 3, 2, 2, 2, 7, 7] + [8] * 12 + [5, 4, 3]
PURPLE, ORANGE = "#7e22ce", "#ea580c"
SVG = "{http://www.w3.org/2000/svg}"


def _day(queue: bool) -> Observation:
    steps = [_step(h) for h in range(25)]
    if queue:
        for st, admitted, waiting in zip(steps, ADMITTED, WAITING):
            st.queue_admitted, st.queue_waiting = admitted, waiting
    return Observation("queue", steps=steps, hourly=True)


def _numbers(values) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def test_markdown_draws_the_queue_after_the_pools():
    text = formats.to_markdown(_day(queue=True))
    blocks = re.findall(r"```mermaid\n(.*?)\n```", text, re.S)
    assert len(blocks) == 2 and '    title "mixed: ' in blocks[0]
    queue = blocks[1].splitlines()
    assert queue[0] == '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + PURPLE + ", " + ORANGE + '"}}}}%%'
    assert queue[1:] == ["xychart-beta",
                         '    title "queue: training jobs admitted and waiting, by hour"',
                         '    x-axis "hour" [' + ", ".join(f'"{h:02d}"' for h in range(25)) + "]",
                         '    y-axis "jobs" 0 --> 8',
                         f"    line {_numbers(ADMITTED)}",
                         f"    line {_numbers(WAITING)}"]
    assert ("*Kueue's queue, training jobs by hour, in order: purple line: jobs admitted; "
            "orange line: jobs waiting in the queue.*") in text


def _markers(svg: ET.Element) -> dict[str, list[tuple[float, float]]]:
    """(x, y) of each plotted point by colour: the markers of the lines in the axes (not the legend's)."""
    axes = next(g for g in svg.iter(f"{SVG}g") if g.get("id", "").endswith("axes_1"))
    out: dict[str, list[tuple[float, float]]] = {}
    for line in axes.findall(f"{SVG}g"):
        if "line2d" in line.get("id", ""):
            for use in line.iter(f"{SVG}use"):
                colour = re.search(r"fill: (#[0-9a-f]{6})", use.get("style", ""))
                if colour:
                    out.setdefault(colour[1], []).append((float(use.get("x")), float(use.get("y"))))
    return out


def test_html_draws_the_queue_after_the_pools():
    page = formats.to_html(_day(queue=True))
    assert page.count("<svg ") == 2
    head, _, queue = page.partition("<h2>Queue</h2>")
    assert "<h2>Pool mixed</h2>" in head and queue.count("<svg ") == 1
    assert "Training jobs in Kueue's queue by hour: admitted" in queue
    svg_text = queue[queue.index("<svg "):queue.index("</svg>") + len("</svg>")]
    svg = ET.fromstring(svg_text)
    assert svg.get("aria-label") == "queue: purple line: jobs admitted; orange line: jobs waiting in the queue"
    points = _markers(svg)
    assert set(points) == {PURPLE, ORANGE}
    # One point per hour, left to right, each at its figure's height: a y falls by the same step
    # per job in both series (SVG's y grows downwards), so the figures and the scale are the data's.
    figures = {PURPLE: ADMITTED, ORANGE: WAITING}
    zero = next(y for colour in points for (_, y), v in zip(points[colour], figures[colour]) if v == 0)
    top = next(y for colour in points for (_, y), v in zip(points[colour], figures[colour]) if v == 8)
    per_job = (zero - top) / 8
    assert per_job > 0
    # The axis runs from 0 jobs to the most at any hour: the plot area's bottom and top edges.
    area = next(g for g in svg.iter(f"{SVG}g") if g.get("id", "").endswith("patch_2")).find(f"{SVG}path")
    edges = [float(y) for y in re.findall(r"[ML] [\d.]+ ([\d.]+)", area.get("d"))]
    assert (max(edges), min(edges)) == pytest.approx((zero, top))
    for colour, series in points.items():
        assert len(series) == 25
        assert [x for x, _ in series] == sorted(x for x, _ in series)
        assert [round((zero - y) / per_job, 3) for _, y in series] == figures[colour], colour


def test_no_queue_no_queue_chart():
    obs = _day(queue=False)
    text = formats.to_markdown(obs)
    assert len(re.findall(r"```mermaid\n", text)) == 1 and "queue:" not in text and '"jobs"' not in text
    page = formats.to_html(obs)
    assert page.count("<svg ") == 1 and "<h2>Queue</h2>" not in page and "Kueue" not in page


def test_a_step_without_the_queue_s_figures_is_refused():
    steps = _day(queue=True).steps
    steps[3].queue_waiting = None
    with pytest.raises(ValueError, match="queue figures missing at step"):
        queue_chart(steps)
    assert queue_chart(_day(queue=False).steps) is None


def test_names_and_messages_from_the_cluster_are_escaped_in_every_format():
    # A TFJob name or an API server message comes from the change under review: it must not move
    # the terminal's cursor, start a workflow command, or add HTML or a table cell to a comment.
    hostile = "x\x1b[2J<img src=y>|z"
    obs = Observation("night", steps=[StepReport("night", online_desired=2, online_placed=2, actions=[hostile])],
                      hourly=False, notes=["::error::forged"])
    text = formats.to_text(obs)
    assert "\x1b" not in text and "\\x1b[2J" in text and "\n::error" not in text, text
    markdown = formats.to_markdown(obs)
    assert "\x1b" not in markdown and "<img" not in markdown and "&lt;img src=y&gt;\\|z" in markdown, markdown
    assert "\n- ::error" not in markdown, markdown
    assert "&lt;img" in formats.to_html(obs)

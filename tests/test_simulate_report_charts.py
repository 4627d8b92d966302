"""The charts of `colocate simulate --format markdown|html` (colocate/simulate/formats.py), from an
Observation made by hand: no simulation runs. tests/simulate/test_charts.py renders the charts
with the real tools (mmdc, Chromium)."""
from __future__ import annotations

import re

from colocate.simulate import formats
from colocate.simulate.charts import OFFLINE, PoolHour
from colocate.simulate.observe import Observation
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

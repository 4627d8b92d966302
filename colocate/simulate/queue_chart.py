"""Kueue's queue by hour, for the day chart (charts.py draws it after the pools, in Markdown and
in HTML): at each hour step, the training jobs (Workloads) admitted and those waiting.

Both series are lines, not bars: by day the queue is held and nothing is admitted, and Mermaid
draws a bar of 0 as a stub below its 0 tick (charts.py)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from colocate.simulate.charts import LINE_COLOURS, OFFLINE

#: (name, hex) of each series: admitted in the offline line's purple (they are the training that
#: holds quota), waiting in orange, a colour no pool chart uses.
COLOURS = {"admitted": LINE_COLOURS[OFFLINE], "waiting": ("orange", "#ea580c")}
TEXTS = {"admitted": "line: jobs admitted", "waiting": "line: jobs waiting in the queue"}


@dataclass(frozen=True)
class QueueChart:
    """Jobs per hour of ``hours``; drawn like a PoolChart (hours, y_max, y_label, series, legend)."""
    hours: tuple[int, ...]
    admitted: tuple[int, ...]
    waiting: tuple[int, ...]
    y_label: ClassVar[str] = "jobs"
    #: The Mermaid block's title and the line under it; the HTML figure's caption.
    title: ClassVar[str] = "queue: training jobs admitted and waiting, by hour"
    about: ClassVar[str] = "Kueue's queue, training jobs by hour"
    caption: ClassVar[str] = ("Training jobs in Kueue's queue by hour: admitted (holding the ClusterQueue's quota) "
                              "and waiting.")

    @property
    def y_max(self) -> int:
        """The most jobs at any hour, and at least 1 so an empty queue still has an axis."""
        return max(1, *self.admitted, *self.waiting)

    def series(self) -> list[tuple[str, str, tuple[int, ...]]]:
        return [("line", "admitted", self.admitted), ("line", "waiting", self.waiting)]

    def legend(self) -> list[tuple[str, str, str]]:
        return [(*COLOURS[name], TEXTS[name]) for _, name, _ in self.series()]


def queue_chart(steps: Sequence[Any]) -> QueueChart | None:
    """The chart of a day's steps (steps.StepReport; the hour is the step's index, as in its
    PoolHour rows), or None when the run had no queue (no step has Kueue's figures)."""
    if all(st.queue_admitted is None for st in steps):
        return None
    missing = [st.name for st in steps if st.queue_admitted is None or st.queue_waiting is None]
    if missing:   # a run has Kueue at every step or at none
        raise ValueError(f"queue figures missing at step(s) {', '.join(missing)}")
    return QueueChart(tuple(range(len(steps))), tuple(st.queue_admitted for st in steps),
                      tuple(st.queue_waiting for st in steps))

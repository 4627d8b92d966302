"""``colocate simulate --scenario day`` on the reference: 25 hour steps in the real components,
the schedule's pause and resume, one unplanned spike, the resubmitter; the Markdown report's
charts rendered by mmdc in Chromium, the HTML page loaded in headless Chromium."""
from __future__ import annotations

import html
import json
import re
import subprocess

import pytest

from colocate import ROOT
from colocate.config import load
from tests.helpers import colocate
from colocate.simulate.charts import BAR_COLOURS
from tests.simulate.test_charts import OFFLINE_ARGS, _load_page, chromium, coloured_pixels, mmdc, non_white_fraction
from tests.simulate.test_simulate import TAG

DIST = ROOT / "dist"


@pytest.fixture(scope="module")
def day_html(tmp_path_factory):
    return tmp_path_factory.mktemp("day") / "day.html"


@pytest.fixture(scope="module")
def markdown(day_html):
    """One day's run: the Markdown report on stdout, the HTML page through ``--write``."""
    return colocate("simulate", str(DIST), "--scenario", "day", "--format", "markdown",
                    "--write", f"html:{day_html}", env=TAG)


def _steps(text: str) -> dict[str, str]:
    """Each hour's line, as the comment shows it (the Markdown escapes its HTML: ``->`` is ``-&gt;``)."""
    return {m[1]: html.unescape(m[2]) for m in re.finditer(r"^- (\d\d:00): (.*)$", text, re.M)}


def test_the_day_places_every_online_pod_every_hour_and_ends_with_every_tfjob_running(markdown):
    assert markdown.returncode == 0, markdown.stdout[-3000:] + markdown.stderr[-2000:]
    steps = _steps(markdown.stdout)
    assert list(steps) == [f"{h:02d}:00" for h in range(25)], list(steps)
    for name, line in steps.items():
        placed, desired = map(int, re.search(r"online (\d+)/(\d+) placed", line).groups())
        assert placed == desired and desired > 0, (name, line)
        assert "UNPLACED" not in line, (name, line)
    jobs = re.search(r"#### TFJobs\n\n((?:- .*\n)+)", markdown.stdout)[1]
    assert jobs.count(": Running") == 3 and "Failed" not in jobs, jobs


def test_the_unplanned_spike_preempts_training_and_the_jobs_come_back(markdown):
    steps = _steps(markdown.stdout)
    spike = steps["02:00"]
    assert "[spike]" in spike and int(re.search(r"(\d+) preempted", spike)[1]) >= 1, spike
    assert int(re.search(r"(\d+) resubmitted", spike)[1]) >= 1, spike
    after = steps["03:00"]
    assert re.search(r"training (\d+) running, 0 pending", after), after


def test_the_schedule_pauses_before_the_peak_and_resumes_after_it(markdown):
    schedule = load().schedule
    steps = _steps(markdown.stdout)
    pause, resume = f"{-(-schedule.pause_at // 60):02d}:00", f"{-(-schedule.resume_at // 60):02d}:00"
    # With Kueue (the reference) the schedule holds and releases the training ClusterQueue.
    assert "offline pause: ClusterQueue training stopPolicy None -> HoldAndDrain" in steps[pause], steps[pause]
    assert "offline resume: ClusterQueue training held by colocate-offline-pause: stopPolicy HoldAndDrain -> None" \
        in steps[resume], steps[resume]
    peak = [h for h in range(25) if schedule.peak_start <= h * 60 < schedule.peak_end]
    for hour in peak:
        line = steps[f"{hour:02d}:00"]
        assert re.search(r"training 0 running, 0 pending, (\d+) suspended", line) and " 0 preempted" in line, line


def test_the_report_states_the_night_allocation_with_and_without_training(markdown):
    found = re.search(r"- mixed pool at night .*: GPU (\d+)% without training, (\d+)% with it; "
                      r"CPU (\d+)% without training, (\d+)% with it", markdown.stdout)
    assert found, markdown.stdout[-2000:]
    gpu_without, gpu_with, cpu_without, cpu_with = map(int, found.groups())
    assert gpu_with > gpu_without and cpu_with > cpu_without


def test_the_markdown_charts_render_with_mmdc(markdown, tmp_path):
    tool, browser = mmdc(), chromium()
    page = tmp_path / "day.md"
    page.write_text(markdown.stdout)
    # A chart per pool (mixed, monitoring, online), then Kueue's queue (the reference queues training).
    assert markdown.stdout.count("```mermaid") == 4
    config = tmp_path / "puppeteer.json"
    config.write_text(json.dumps({"executablePath": browser, "args": ["--no-sandbox", *OFFLINE_ARGS]}))
    proc = subprocess.run([str(tool), "--quiet", "-p", str(config), "-i", str(page), "-o", str(tmp_path / "out.md"),
                           "-e", "png", "-b", "white"], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for index in (1, 2, 3, 4):  # mixed, monitoring, online, the queue: axes and labels at least
        assert non_white_fraction(tmp_path / f"out-{index}.png") > 0.02
    # The mixed pool's GPU bars are drawn.
    assert coloured_pixels(tmp_path / "out-1.png", BAR_COLOURS["gpu"][1]) > 1000


def test_the_html_page_draws_the_day_offline(markdown, day_html, tmp_path):
    assert markdown.returncode == 0, markdown.stderr[-2000:]
    page = day_html
    dom, requests = _load_page(chromium(), page, tmp_path / "day.png")
    assert dom.count("<svg ") == 4 and "<table>" in dom and "02:00" in dom
    assert requests == []
    assert non_white_fraction(tmp_path / "day.png") > 0.05

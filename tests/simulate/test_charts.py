"""The day chart (colocate/simulate/charts.py) on a synthetic day: 25 hour steps, three pools,
training at night and online traffic at its peak by day. The Mermaid is rendered by its own CLI
(mmdc, package.json) in Debian's Chromium, the HTML page is loaded in headless Chromium; both
write PNGs a person can look at (pytest --basetemp=DIR keeps them). A missing tool fails, saying
how to install it."""
from __future__ import annotations

import json
import re
import shutil
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from colocate import ROOT
from colocate.simulate import queue_chart
from colocate.simulate.charts import (BAR_COLOURS, LINE_COLOURS, OFFLINE, PoolHour, html, mermaid,
                                      pool_charts)
from colocate.simulate.queue_chart import QueueChart
from tests.helpers import run

HOURS = range(25)
SVG = "{http://www.w3.org/2000/svg}"
#: Chromium is kept off the network: every host name resolves to nothing and every connection goes
#: to a closed loopback port, so neither the page nor Chromium's own background services (which
#: it contacts even headless) send anything off this machine.
OFFLINE_ARGS = ["--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9"]
BOOTSTRAP = "run scripts/bootstrap (it installs Debian's chromium with apt-get and mmdc with npm ci)"


def _load(hour: int) -> float:
    """Online traffic: 0 at night, 1 at the peak 09..18, ramps between."""
    if 9 <= hour <= 18:
        return 1.0
    if 6 < hour < 9:
        return (hour - 6) / 3
    if 18 < hour < 21:
        return (21 - hour) / 3
    return 0.0


def _training(hour: int) -> float:
    """Training runs at night and is paused 07..20."""
    return 0.0 if 7 <= hour <= 20 else 1.0


def day() -> list[PoolHour]:
    rows = []
    for h in HOURS:
        load, train = _load(h), _training(h)
        rows += [
            PoolHour(h, "online", "cpu", {"online": 12 + 28 * load, "system": 2}, 48),
            PoolHour(h, "online", "memory", {"online": 40 + 100 * load, "system": 4}, 180),
            PoolHour(h, "online", "gpu", {}, 0),   # no GPUs: no GPU line
            PoolHour(h, "mixed", "cpu", {"online": 4 + 16 * load, OFFLINE: 36 * train, "system": 2}, 62),
            PoolHour(h, "mixed", "memory", {"online": 16 + 64 * load, OFFLINE: 300 * train}, 480),
            PoolHour(h, "mixed", "gpu", {"online": 2 + 4 * load, OFFLINE: 6 * train}, 8),
            PoolHour(h, "monitoring", "cpu", {"monitoring": 5 + 2 * load}, 15),
            PoolHour(h, "monitoring", "memory", {"monitoring": 20 + 6 * load}, 60),
        ]
    return rows


#: Kueue's queue over the day: full at night, held (nothing admitted) while training is paused.
QUEUE = QueueChart(tuple(HOURS), tuple(0 if _training(h) == 0 else 3 + h % 2 for h in HOURS),
                   tuple(2 + (h >= 10) for h in HOURS))


#: Quotes, a line break, a Mermaid comment marker, Markdown and HTML: all must come out as text.
TITLE = 'A "day" <b>&</b>\n%% `x`'
#: How Mermaid shows "<b>&</b>" of it: look-alikes, as DOMPurify would turn them into "&amp;" or drop tags.
MERMAID_B = "\u2039b\u203a+\u2039/b\u203a"


def chromium() -> str:
    path = shutil.which("chromium")
    if not path:
        pytest.fail(f"chromium not found on PATH: {BOOTSTRAP}; or apt-get install chromium")
    return path


def mmdc() -> Path:
    path = ROOT / "node_modules" / ".bin" / "mmdc"
    if not path.exists():
        pytest.fail(f"{path} is missing (@mermaid-js/mermaid-cli in package.json): {BOOTSTRAP}")
    return path


def _pixels(png: Path, mode: str):
    import numpy   # matplotlib's dependencies: numpy, Pillow
    from PIL import Image

    with Image.open(png) as image:
        return numpy.asarray(image.convert(mode), dtype=numpy.int16)


def coloured_pixels(png: Path, colour: str) -> int:
    """How many pixels of the PNG are (within a small tolerance) this #rrggbb colour."""
    want = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return int((abs(_pixels(png, "RGB") - want) <= 8).all(axis=-1).sum())


def non_white_fraction(png: Path) -> float:
    return float((_pixels(png, "L") < 240).mean())


# --- the model, without tools -------------------------------------------------------------------

def test_series_of_the_synthetic_day():
    charts = {c.pool: c for c in pool_charts(day())}
    assert list(charts) == ["online", "mixed", "monitoring"]
    mixed = charts["mixed"]
    assert mixed.hours == tuple(HOURS) and mixed.key == "gpu"
    assert mixed.totals["gpu"][0] == 100.0 and mixed.totals["gpu"][12] == 75.0
    assert mixed.offline[0] == 75.0 and mixed.offline[12] == 0.0
    assert [kind for kind, _, _ in mixed.series()] == ["bar", "line", "line", "line"]
    online = charts["online"]
    assert online.key == "cpu" and "gpu" not in online.totals and set(online.offline) == {0.0}


@pytest.mark.parametrize("bad, message", [
    (lambda rows: rows[:-1], "no row for hour"),
    (lambda rows: rows + rows[:1], "two rows"),
    (lambda rows: rows + [PoolHour(25, "mixed", "cpu", {}, 1)], "0..24"),
    (lambda rows: rows + [PoolHour(3, "online", "disk", {}, 1)], "resource must be"),
    (lambda rows: [r if (r.pool, r.resource, r.hour) != ("online", "gpu", 3)
                   else PoolHour(3, "online", "gpu", {"online": 1}, 0) for r in rows], "allocatable of 0"),
    (lambda rows: [], "nothing to chart"),
])
def test_inconsistent_rows_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        mermaid(bad(day()))


def test_mermaid_escapes_the_title_and_names_the_series():
    text = mermaid(day(), TITLE)
    blocks = re.findall(r"```mermaid\n(.*?)\n```", text, re.S)
    assert len(blocks) == 3
    for pool, block in zip(["online", "mixed", "monitoring"], blocks):
        assert f"""    title "{pool}: A 'day' {MERMAID_B} %% `x`"\n""" in block
    assert "\n%% `x`" not in text   # the line break did not reach the block
    captions = re.findall(r"^\*Pool .*\*$", text, re.M)
    assert captions[1] == ("*Pool `mixed`, % of allocatable by hour, in order: light red bars: GPU requests, "
                           "all tiers; blue line: CPU requests, all tiers; green line: memory requests, all tiers; "
                           "purple line: offline (training) GPU requests.*")


def test_output_is_deterministic_and_matplotlib_is_imported_lazily():
    rows = day()
    assert mermaid(rows) == mermaid(list(rows))
    first = html(rows, "day")
    assert html(list(rows), "day") == first
    # A fresh interpreter gives the same bytes (no date, no random ids), and importing the module
    # does not import matplotlib.
    code = ("import sys; sys.path.insert(0, %r); import colocate.simulate.charts as c; "
            "assert 'matplotlib' not in sys.modules, 'imported at module import'; "
            "from tests.simulate.test_charts import day; sys.stdout.write(c.html(day(), 'day'))") % str(ROOT)
    proc = run([sys.executable, "-c", code], check=True)
    assert proc.stdout == first


def test_html_escapes_titles_and_tables_and_has_no_external_reference():
    page = html(day(), TITLE, [("Hours <i>", ["hour", "a<b"], [["00", "<script>x</script>"]])])
    assert "<b>&</b>" not in page and "&lt;b&gt;&amp;&lt;/b&gt;" in page
    assert "<script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<th>a&lt;b</th>" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert page.count("<svg ") == 3
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "ids repeat across the inline SVGs"


# --- rendered by the real tools -----------------------------------------------------------------

def test_mermaid_renders_with_mmdc_in_chromium(tmp_path):
    """mmdc reads the Markdown as a PR comment holds it and renders each block: one SVG per pool
    with 25 bars, a line per series and the hour labels; then PNGs of the same."""
    tool, browser = mmdc(), chromium()
    rows = day()
    markdown = tmp_path / "day.md"
    markdown.write_text(mermaid(rows, TITLE, queue=QUEUE))
    config = tmp_path / "puppeteer.json"
    # --no-sandbox: Chromium's sandbox refuses to run as root, as we do here and in CI.
    config.write_text(json.dumps({"executablePath": browser, "args": ["--no-sandbox", *OFFLINE_ARGS]}))
    started = time.monotonic()
    for ext in ("svg", "png"):
        proc = run([str(tool), "--quiet", "-p", str(config), "-i", str(markdown), "-o", str(tmp_path / f"out-{ext}.md"),
                    "-e", ext, "-b", "white"], cwd=tmp_path)
        assert proc.returncode == 0, f"mmdc failed:\n{proc.stdout}\n{proc.stderr}"
    print(f"mmdc: {time.monotonic() - started:.1f}s for svg and png, in {tmp_path}")

    for index, chart in enumerate(pool_charts(rows), start=1):
        svg_path = tmp_path / f"out-svg-{index}.svg"
        assert svg_path.stat().st_size > 0
        svg = ET.parse(svg_path).getroot()
        groups = {g.get("class"): g for g in svg.iter(f"{SVG}g") if g.get("class")}
        bars = [g for name, g in groups.items() if name.startswith("bar-plot-")]
        lines = [g for name, g in groups.items() if name.startswith("line-plot-")]
        assert len(bars) == 1 and len(bars[0].findall(f"{SVG}rect")) == 25, chart.pool
        assert len(lines) == len(chart.series()) - 1, chart.pool
        texts = ["".join(t.itertext()) for t in svg.iter(f"{SVG}text")]
        hour_labels = ["".join(t.itertext()) for t in groups["bottom-axis"].iter(f"{SVG}text")]
        assert hour_labels == [f"{h:02d}" for h in HOURS] + ["hour"], chart.pool
        assert f"{chart.pool}: A 'day' {MERMAID_B} %% `x`" in texts, texts[:3]
        assert "% of allocatable" in texts
        # The palette directive took: the bars and each line in the colours the caption names.
        colours = [colour for _, colour, _ in chart.legend()]
        assert {r.get("fill") for r in bars[0].findall(f"{SVG}rect")} == {colours[0]}
        assert [g.find(f"{SVG}path").get("stroke") for g in lines] == colours[1:]

        png = tmp_path / f"out-png-{index}.png"
        assert png.stat().st_size > 0
        assert non_white_fraction(png) > 0.05, f"{png} is (nearly) blank"
        assert coloured_pixels(png, BAR_COLOURS[chart.key][1]) > 1000, f"{png}: no bars"

    # The queue's chart comes last: two lines, no bars, in the caption's colours, y in jobs.
    svg = ET.parse(tmp_path / f"out-svg-{index + 1}.svg").getroot()
    groups = {g.get("class"): g for g in svg.iter(f"{SVG}g") if g.get("class")}
    assert not [name for name in groups if name.startswith("bar-plot-")]
    lines = [g for name, g in groups.items() if name.startswith("line-plot-")]
    assert [g.find(f"{SVG}path").get("stroke") for g in lines] == [hex_ for _, hex_, _ in QUEUE.legend()]
    texts = ["".join(t.itertext()) for t in svg.iter(f"{SVG}text")]
    assert QUEUE.title in texts and "jobs" in texts
    png = tmp_path / f"out-png-{index + 1}.png"
    assert coloured_pixels(png, queue_chart.COLOURS["waiting"][1]) > 200, f"{png}: no waiting line"


def _net_requests(netlog: Path) -> list[str]:
    """URLs of the requests a page made, from Chromium's net log: those with an initiator (the
    browser's own background requests have none: "not an origin")."""
    log = json.loads(netlog.read_text())
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    return [e["params"]["url"] for e in log["events"]
            if types.get(e["type"]) == "URL_REQUEST_START_JOB" and "url" in e.get("params", {})
            and e["params"].get("initiator") != "not an origin"]


def _load_page(browser: str, page: Path, out: Path) -> tuple[str, list[str]]:
    """Load the page in headless Chromium: its DOM after load, a screenshot, the requests it made."""
    netlog = out.with_suffix(".netlog.json")
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={out.parent / 'chromium-profile'}", *OFFLINE_ARGS, f"--log-net-log={netlog}"]
    dom = run([*args, "--dump-dom", page.as_uri()])
    assert dom.returncode == 0 and "</html>" in dom.stdout, dom.stderr[-2000:]
    shot = run([*args, "--window-size=1000,2000", f"--screenshot={out}", page.as_uri()])
    assert shot.returncode == 0 and out.stat().st_size > 0, shot.stderr[-2000:]
    return dom.stdout, _net_requests(netlog)


def test_html_page_loads_offline_in_chromium(tmp_path):
    browser = chromium()
    page = tmp_path / "day.html"
    page.write_text(html(day(), TITLE, [("Hours", ["hour", "online pods"], [[f"{h:02d}", "3"] for h in HOURS])],
                         queue=QUEUE))
    started = time.monotonic()
    dom, requests = _load_page(browser, page, tmp_path / "day.png")
    print(f"chromium: {time.monotonic() - started:.1f}s for the DOM and the screenshot, in {tmp_path}")

    assert dom.count("<svg ") == 4 and "<table>" in dom
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", dom)
    assert requests == []
    shot = tmp_path / "day.png"
    assert non_white_fraction(shot) > 0.05, "the screenshot is (nearly) blank"
    for colour in (BAR_COLOURS["gpu"][1], BAR_COLOURS["cpu"][1], LINE_COLOURS[OFFLINE][1],
                   queue_chart.COLOURS["waiting"][1]):
        assert coloured_pixels(shot, colour) > 200, f"no {colour} in {shot}"

    # The request check can fail: the same page with an outside image (and without its CSP) is
    # seen requesting it. The host resolves to nothing here, so no traffic leaves the machine.
    leaky = tmp_path / "leaky.html"
    leaky.write_text(page.read_text().replace('<meta http-equiv="Content-Security-Policy"', '<meta name="x"')
                     .replace("</h1>", '</h1><img src="https://example.invalid/x.png">'))
    _, leaked = _load_page(browser, leaky, tmp_path / "leaky.png")
    assert leaked == ["https://example.invalid/x.png"]

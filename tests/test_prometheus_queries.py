"""Every dashboard query and recording rule we ship returns data from a real Prometheus.

Debian's prometheus (2.42) on loopback reads a TSDB built by `promtool tsdb create-blocks-from
openmetrics` from tests/fixtures/series/colocation.om (series shaped like the pinned exporters'
output). The recording rules are first queried as expressions, then backfilled with `promtool
tsdb create-blocks-from rules`, and Prometheus restarted on raw + recorded blocks, so the
dashboard panels that read recording rules are tested against what the rules really produce.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from colocate.mixin.config import PARSE_VALUES
from colocate.promql.grafana import expand_variables, panel_queries
from colocate.simulate.local_cluster import free_port
from tests.fixtures.series import generate
from tests.test_alerts import shipped_rule_files
from tests.test_dashboards import shipped_dashboards
from tests.helpers import colocate, stop, wait_ready

#: Query time: the last sample of the fixture, so every [1h] window is full.
AT = generate.START + (generate.SAMPLES - 1) * generate.STEP
#: Backfill recording rules over the last 20 minutes of the fixture.
BACKFILL_FROM = AT - 20 * 60
#: Dashboard variables as Grafana would substitute them on the mixed pool with "All" nodes.
VARIABLES = {**PARSE_VALUES, "pool": "mixed", "node": "(mixed-1|mixed-2)"}
_LABEL_VALUES = "label_values("


def _tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        pytest.fail(f"{name} not found on PATH: run make bootstrap (installs Debian's prometheus package)")
    return path


@contextmanager
def prometheus(data: Path, workdir: Path) -> Iterator[str]:
    """A Prometheus on loopback over ``data``; yields its base URL, always stops it."""
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  evaluation_interval: 1m\n")
    port = free_port()
    log = (workdir / f"prometheus-{port}.log").open("w")
    proc = subprocess.Popen([_tool("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={data}",
                             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, workdir / log.name, "prometheus")
        yield url
    finally:
        stop(proc)
        log.close()


def query(url: str, expr: str) -> list[dict]:
    params = urllib.parse.urlencode({"query": expr, "time": AT})
    with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=10) as resp:
        body = json.load(resp)
    assert body["status"] == "success", body
    return body["data"]["result"]


def _variable_query(text: str) -> tuple[str, str]:
    """``label_values(selector, label)`` -> (selector, label)."""
    assert text.startswith(_LABEL_VALUES) and text.endswith(")"), text
    selector, _, label = text[len(_LABEL_VALUES):-1].rpartition(",")
    return selector.strip(), label.strip()


@pytest.fixture(scope="module")
def tsdb(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("prometheus")
    subprocess.run([_tool("promtool"), "tsdb", "create-blocks-from", "openmetrics", "--quiet",
                    str(generate.OUT), str(workdir / "data")], check=True, timeout=60, capture_output=True)
    return workdir


def test_fixture_file_is_fresh(tmp_path, monkeypatch):
    committed = generate.OUT.read_text()
    monkeypatch.setattr(generate, "OUT", tmp_path / "colocation.om")
    generate.main()
    assert generate.OUT.read_text() == committed, \
        "tests/fixtures/series/colocation.om is stale: run python tests/fixtures/series/generate.py"


@pytest.fixture(scope="module")
def recorded(rendered, tsdb) -> Path:
    """The fixture TSDB plus the recording rules backfilled over its last 20 minutes (promtool
    evaluates them against a Prometheus on the raw data)."""
    with prometheus(tsdb / "data", tsdb) as url:
        recorded = tsdb / "recorded"
        for i, doc in enumerate(shipped_rule_files(rendered).values()):
            plain = tsdb / f"recording-{i}.yaml"
            plain.write_text(yaml.safe_dump({"groups": [
                {"name": g["name"], "rules": [r for r in g["rules"] if "record" in r]} for g in doc["groups"]
                if any("record" in r for r in g["rules"])]}))
            subprocess.run([_tool("promtool"), "tsdb", "create-blocks-from", "rules", "--quiet", f"--url={url}",
                            f"--start={BACKFILL_FROM}", f"--end={AT + 1}", f"--output-dir={recorded}", str(plain)],
                           check=True, timeout=120, capture_output=True)
    for block in recorded.iterdir():
        shutil.move(str(block), tsdb / "data" / block.name)
    return tsdb


@pytest.fixture(scope="module")
def prometheus_url(recorded) -> Iterator[str]:
    with prometheus(recorded / "data", recorded) as url:
        yield url


def test_every_recording_rule_and_dashboard_query_returns_data(rendered, prometheus_url):
    started = time.monotonic()
    url = prometheus_url
    rule_files = shipped_rule_files(rendered)
    records = [(path, rule) for path, doc in rule_files.items() for g in doc["groups"] for rule in g["rules"]
               if "record" in rule]
    dashboards = shipped_dashboards(rendered)
    assert records and dashboards
    empty: list[str] = []
    for path, rule in records:
        if not query(url, rule["expr"]):
            empty.append(f"{path}: recording rule {rule['record']}: {rule['expr']}")
    for path, board in dashboards.items():
        where = f"{path}: dashboard {board['title']!r}"
        for var in board["templating"]["list"]:
            if var["type"] == "query":
                selector, label = _variable_query(expand_variables(var["query"], VARIABLES))
                if not any(label in s["metric"] for s in query(url, selector)):
                    empty.append(f"{where}: variable {var['name']}: {var['query']}")
        for title, expr in panel_queries(board):
            if not query(url, expand_variables(expr, VARIABLES)):
                empty.append(f"{where}: panel {title!r}: {expr}")
    print(f"real Prometheus: {len(records)} recording rules, "
          f"{sum(1 for b in dashboards.values() for _ in panel_queries(b))} panel queries in "
          f"{time.monotonic() - started:.1f}s")
    assert not empty, "queries without data:\n" + "\n".join(empty)


def test_tfjob_state_panel_counts_each_tfjob_once_in_its_current_state(rendered, prometheus_url):
    """Conditions accumulate (Created stays True, Restarting outlives a failure): the panel must
    still put each of the fixture's four TFJobs in exactly one state."""
    (board,) = [b for b in shipped_dashboards(rendered).values() if b["title"] == "Colocation"]
    (expr,) = [e for title, e in panel_queries(board) if title == "TFJobs by state"]
    got = {r["metric"]["type"]: r["value"][1] for r in query(prometheus_url, expand_variables(expr, VARIABLES))}
    want = {"Running": "1", "Created": "1", "Succeeded": "1", "Failed": "1"}
    assert got == want, f"fixture TFJobs {generate.TFJOBS} gave {got}"


def _report(url: str, *args: str) -> subprocess.CompletedProcess:
    return colocate("report", "--prometheus", url, "--until", str(AT), "--since", "1h", *args)


def test_report_prints_the_fixtures_utilisation_p99_and_gpu_hours(prometheus_url):
    """The figures, computed here from the fixture's own numbers: CPU used per pool = the
    pods' cores over the pool's allocatable (cpu - 0.5 per node); P99 = the histogram's
    interpolated quantiles; GPU-hours = GPUs of Running training pods x 1 hour."""
    proc = _report(prometheus_url, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    alloc = {}
    for pool, _role, _ip, cpu, *_rest in generate.NODES.values():
        alloc[pool] = alloc.get(pool, 0) + cpu - 0.5
    used = {}
    for _ns, _pod, node, *_r, cpu_used in generate.PODS:
        if node:
            pool = generate.NODES[node][0]
            used[pool] = used.get(pool, 0) + cpu_used
    figures = {(f["pool"], f["resource"], f["what"]): f for f in got["pools"]}
    for pool, cores in used.items():
        night = figures[(pool, "cpu", "used")]["night"]
        assert night == pytest.approx(cores / alloc[pool], rel=1e-6), pool
        # 22:13 to 23:13 UTC is night (22-6): no day sample
        assert figures[(pool, "cpu", "used")]["day"] is None
    (service,) = got["services"]
    assert service["service"] == "recsys-inference" and service["samples"] > 0
    # rate() extrapolates each window to its edges: a few parts per million off the exact quantile
    assert service["p99"] == pytest.approx(generate.P99_NOW, rel=1e-5)
    assert service["baseline"] == pytest.approx(generate.P99_BEFORE, rel=1e-5)
    assert service["change"] == pytest.approx(generate.P99_NOW / generate.P99_BEFORE - 1, rel=1e-4)
    gpus = sum(gpu for ns, pod, node, pc, phase, *_r, gpu, _used in generate.PODS if ns == "training" and phase == "Running")
    assert got["gpu_hours"] == pytest.approx(gpus * (AT - generate.START) / 3600)
    assert got["preemptions"] is None and any("scheduler_preemption_victims" in m for m in got["missing"])


def test_report_text_and_markdown_carry_the_same_figures(prometheus_url):
    text, markdown = (_report(prometheus_url, "--format", f).stdout for f in ("text", "markdown"))
    for out in (text, markdown):
        assert "recsys-inference" in out and "2.30 ms" in out and "2.10 ms" in out and "+9.5%" in out
        assert "GPU-hours delivered to training: 2.0" in out
    assert markdown.startswith("## colocate report") and "| pool |" in markdown


@pytest.mark.parametrize("args, words", [
    (("--until", "2020-01-01T00:00:00Z"), "no samples between 2019-12-31T23:00:00Z and 2020-01-01T00:00:00Z"),
    (("--since", "soon"), "--since 'soon'"),
    (("--night", "25-3"), "--night '25-3'"),
])
def test_report_refuses_an_empty_range_or_bad_options_with_exit_2(prometheus_url, args, words):
    proc = colocate("report", "--prometheus", prometheus_url, "--since", "1h", "--until", str(AT), *args)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_report_says_when_prometheus_is_unreachable():
    proc = colocate("report", "--prometheus", f"http://127.0.0.1:{free_port()}", "--until", str(AT))
    assert proc.returncode == 2 and "cannot reach Prometheus at http://127.0.0.1:" in proc.stderr, proc.stderr

#!/usr/bin/env python3
"""Benchmark the test suite: run `make test` (or `make test-fast`) several times back to back,
optionally beside busy loops, and print per run the tests passed, pytest's seconds, the wall time,
the CPU seconds of every process the run started, and the load average seen. Then the median, and
the floor the CPU time sets on this machine's cores: no arrangement of the same work finishes
sooner. Not a test: figures (CONTRIBUTING.md, "How long the suite takes").

    .venv/bin/python scripts/bench_suite.py --runs 3 --hog 1
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: pytest's last line: "1603 passed in 1251.70s (0:20:51)", or with failures first.
SUMMARY = re.compile(r"=+ (.*?) in ([0-9.]+)s")


def _hogs(count: int) -> list[subprocess.Popen]:
    """``count`` busy loops, one core's worth each, in their own process group."""
    return [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True) for _ in range(count)]


def run_once(target: str, args: str, log: Path) -> dict:
    """One `make <target>`: its exit code, pytest's summary, wall and CPU seconds, load seen."""
    loads: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(30):
            loads.append(os.getloadavg()[0])
            print(f"  ... {len(loads) * 30} s, load {loads[-1]:.1f}", file=sys.stderr, flush=True)

    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(["make", "-C", str(ROOT), target, f"ARGS={args}"], stdout=out,
                                stderr=subprocess.STDOUT, env={**os.environ, "CI": "true"})
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        # wait4 counts the CPU of every descendant its parent reaped: pytest, its workers, kubeconform,
        # the simulation's components.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        done.set()
    wall = time.monotonic() - started
    found = SUMMARY.findall(log.read_text(errors="replace"))
    summary, seconds = found[-1] if found else ("no pytest summary", "nan")
    return {"code": proc.returncode, "summary": summary, "pytest": float(seconds), "wall": wall,
            "cpu": usage.ru_utime + usage.ru_stime, "loads": loads or [os.getloadavg()[0]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs back to back (default 3)")
    parser.add_argument("--hog", type=int, default=0, help="busy loops beside the runs, one core each (default 0)")
    parser.add_argument("--target", choices=("test", "test-fast"), default="test", help="the make target (default test)")
    parser.add_argument("--args", default="", help="pytest arguments, as make's ARGS")
    options = parser.parse_args(argv)
    if options.runs < 1 or options.hog < 0:
        parser.error("--runs must be at least 1 and --hog at least 0")
    logs = Path(tempfile.mkdtemp(prefix="colocate-bench-suite-"))
    cores = os.cpu_count() or 1
    print(f"make {options.target}, {options.runs} run(s) beside {options.hog} busy loop(s) on {cores} cores; "
          f"logs in {logs}", flush=True)
    hogs = _hogs(options.hog)
    results = []
    try:
        for index in range(options.runs):
            print(f"run {index + 1}: started {time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)
            r = run_once(options.target, options.args, logs / f"run-{index + 1}.log")
            results.append(r)
            print(f"run {index + 1}: exit {r['code']}, {r['summary']} in {r['pytest']:.1f} s of pytest; wall "
                  f"{r['wall']:.1f} s, CPU {r['cpu']:.0f} s (floor on {cores} cores {r['cpu'] / cores:.0f} s), "
                  f"load {min(r['loads']):.1f} to {max(r['loads']):.1f}", flush=True)
    finally:
        for hog in hogs:
            os.killpg(hog.pid, signal.SIGKILL)
            hog.wait()
    if len(results) > 1:
        print(f"median of {len(results)}: {statistics.median(r['pytest'] for r in results):.1f} s of pytest, wall "
              f"{statistics.median(r['wall'] for r in results):.1f} s, CPU {statistics.median(r['cpu'] for r in results):.0f} s")
    return 0 if all(r["code"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark `colocate simulate`: the reference cluster (night, peak, the 25-hour day and the queue's day) and the
reference plus N generated training jobs, warm (the components already built). Each scenario runs three times:
cold (`--fresh`: the base synced from nothing, nothing kept), first (synced from nothing and kept: what a cold
first run costs now) and warm (the kept base restored: docs/simulate.md, "A kept base"). Prints per run the
wall time from start to teardown, the peak memory of all its processes together (colocate and every component,
summed RSS sampled every 100 ms), the exit code and the report's verdict. Not a test: figures.
"one-job change" is `simulate --base HEAD` on a copy of dist/ committed to a scratch repository, with one job's
TFJob and claim added in the working tree: the base (the reference's, kept by the night's runs) restored, then
the change synced onto it (docs/simulate.md, "A change on a running base"); its cold run syncs the base first.
Targets on 2 cores with a kept base: the night at most 20 s, a one-job change at most 30 s, the day at most
60 s; a cold first run no slower than `--fresh`.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from colocate.simulate import toolchain
from colocate.base.go_builds import environment

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import synth_command, timed, write_jobs  # noqa: E402  (the synth benchmark's jobs and their cluster)

ROOT = Path(__file__).resolve().parent.parent
COLOCATE = Path(sys.executable).parent / "colocate"


def _tree_rss(root: int) -> int:
    """Summed RSS in bytes of ``root`` and all its descendants (from /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(proc.name)] = int(fields[1])
            rss[int(proc.name)] = int(fields[21]) * 4096
        except (OSError, IndexError, ValueError):
            continue
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    return sum(rss.get(pid, 0) for pid in tree)


def measure(args: list[str], cache: Path) -> tuple[float, int, int, str]:
    with tempfile.TemporaryFile("w+") as report:  # a pipe would fill up while we sample
        start = time.perf_counter()
        proc = subprocess.Popen([str(COLOCATE), "simulate", *args, "--format", "json"], cwd=ROOT,
                                env={**environment(), "COLOCATE_CACHE_DIR": str(cache)}, stdout=report,
                                stderr=subprocess.DEVNULL, text=True)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, _tree_rss(proc.pid))
            time.sleep(0.1)
        elapsed = time.perf_counter() - start
        report.seek(0)
        out = report.read()
    try:
        verdict = json.loads(out)["verdict"]
    except (ValueError, KeyError):
        verdict = out[-300:]
    return elapsed, peak, proc.returncode, verdict


def one_job_change(scratch: Path) -> Path:
    """A scratch repository whose commit holds the reference dist/ and whose working tree adds one job."""
    import shutil

    dist = scratch / "change" / "dist"
    shutil.copytree(ROOT / "dist", dist)
    git = ["git", "-C", str(dist.parent), "-c", "user.email=bench@example.com", "-c", "user.name=bench",
           "-c", "commit.gpgsign=false"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run([*git, *command], check=True)
    training = dist / "apps" / "training"
    for source in ("tfjob.training.tf-mnist-dist.yaml", "persistentvolumeclaim.training.tf-mnist-dist-checkpoints.yaml"):
        (training / source.replace("tf-mnist-dist", "bench-job")).write_text(
            (training / source).read_text().replace("tf-mnist-dist", "bench-job"))
    return dist


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="*", default=[100], help="numbers of generated jobs (default 100)")
    parser.add_argument("--only", nargs="*", metavar="WORD", help="only the runs whose label holds one of these "
                        "words (night, change, peak, day, queue, jobs)")
    args = parser.parse_args()
    toolchain.ensure(log=lambda line: print(line, file=sys.stderr))
    runs = [("reference, night", [str(ROOT / "dist")]), ("reference, peak", [str(ROOT / "dist"), "--scenario", "peak"]),
            ("reference, day (25 hours)", [str(ROOT / "dist"), "--scenario", "day"]),
            ("reference, queue day (25 hours)", [str(ROOT / "dist"), "--scenario", "queue"])]
    with tempfile.TemporaryDirectory(prefix="colocate-bench-sim-") as scratch:
        runs.insert(1, ("reference night, one-job change", [str(one_job_change(Path(scratch))), "--base", "HEAD"]))
        for n in args.jobs:
            jobs, dist = Path(scratch) / f"jobs-{n}", Path(scratch) / f"dist-{n}"
            write_jobs(jobs, n)
            timed(synth_command(dist, jobs))  # exits with synth's message if it refuses
            runs.append((f"reference + {n} jobs, night", [str(dist)]))
        cache = Path(scratch) / "cache"  # kept bases of this run only
        print(f"{'run':32} {'base':>6} {'wall s':>7} {'peak MiB':>9} {'exit':>4}  verdict", flush=True)
        for label, run_args in runs:
            if args.only and not any(word in label for word in args.only):
                continue
            for base, extra in (("cold", ["--fresh"]), ("first", []), ("warm", [])):
                elapsed, peak, code, verdict = measure([*run_args, *extra], cache)
                print(f"{label:32} {base:>6} {elapsed:7.1f} {peak / 2**20:9.0f} {code:>4}  {verdict}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

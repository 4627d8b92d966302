#!/usr/bin/env python3
"""Benchmark: synthesize and check the reference cluster plus N generated training jobs.

For each N it writes the reference job files and N generated ones into a temporary jobs
folder, runs synth into a temporary output folder and then `colocate check` on it, each in a
fresh process (as CI runs them), and prints the wall time of both. Not a test: run it with
`make bench` or `.venv/bin/python scripts/bench.py [N ...]`.
Target: N=1000 synthesized and checked in under 60 s on 2 cores, growing at most linearly.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from colocate.go_builds import environment

ROOT = Path(__file__).resolve().parent.parent
PYTHON = Path(sys.executable)
#: Few distinct images, as in a real cluster: jobs share the team's training images.
IMAGES = 20
TARGET_SECONDS = 60

# Three shapes, cycled: collective all-reduce on GPUs, parameter servers, chief + evaluator.
SHAPES = (
    "  Master: {{cpu: 2, cpuLimit: 4, memory: 4Gi, memoryLimit: 8Gi}}\n"
    "  Worker: {{replicas: {workers}, cpu: 2, cpuLimit: 4, memory: 4Gi, memoryLimit: 8Gi, gpus: 1}}\n",
    "  Worker: {{replicas: {workers}, cpu: 1, cpuLimit: 2, memory: 2Gi, memoryLimit: 4Gi}}\n"
    "  PS: {{replicas: 2, cpu: 2, memory: 8Gi}}\n",
    "  Chief: {{cpu: 2, memory: 4Gi}}\n"
    "  Worker: {{replicas: {workers}, cpu: 4, memory: 8Gi, gpus: 1}}\n"
    "  Evaluator: {{cpu: 1, memory: 2Gi}}\n",
)


def write_jobs(folder: Path, n: int) -> None:
    shutil.copytree(ROOT / "jobs", folder)
    for i in range(n):
        name = f"bench-{i:04d}"
        (folder / f"{name}.yaml").write_text(
            f"name: {name}\nimage: harbor.example.com/ml/bench-{i % IMAGES}:1.0.{i % 3}\nroles:\n"
            + SHAPES[i % len(SHAPES)].format(workers=1 + i % 4))


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=environment(), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"{' '.join(args[:3])} ... exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed


def run(n: int, scratch: Path) -> tuple[float, float, int]:
    jobs_dir, outdir = scratch / f"jobs-{n}", scratch / f"dist-{n}"
    write_jobs(jobs_dir, n)
    synth = timed([str(PYTHON), "-c", "import sys; from pathlib import Path; from colocate import app; "
                   "app.synth(Path(sys.argv[1]), jobs_dir=Path(sys.argv[2]))", str(outdir), str(jobs_dir)])
    check = timed([str(PYTHON.parent / "colocate"), "check", str(outdir)])
    objects = sum(1 for p in outdir.rglob("*.yaml") if p.name != "index.yaml")
    return synth, check, objects


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("counts", nargs="*", type=int, default=[10, 100, 1000], help="numbers of generated jobs")
    counts = parser.parse_args().counts
    results = {}
    with tempfile.TemporaryDirectory(prefix="colocate-bench-") as tmp:
        print(f"{'jobs':>6} {'objects':>8} {'synth s':>8} {'check s':>8} {'total s':>8}")
        for n in counts:
            synth, check, objects = run(n, Path(tmp))
            results[n] = synth + check
            print(f"{n:>6} {objects:>8} {synth:>8.2f} {check:>8.2f} {synth + check:>8.2f}", flush=True)
    if 100 in results and 1000 in results:
        print(f"growth 100 -> 1000 jobs: x{results[1000] / results[100]:.2f} (linear would be at most x10)")
    largest = max(results)
    verdict = "within" if results[largest] < TARGET_SECONDS else "OVER"
    print(f"{largest} jobs: {results[largest]:.1f} s, {verdict} the {TARGET_SECONDS} s target")
    return 0 if results[largest] < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())

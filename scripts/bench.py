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
import math
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import yaml

from colocate import app, config as config_mod
from colocate.model import quantity
from colocate.base.go_builds import environment
from colocate.model import cluster as cluster_mod
from colocate.model.pools import Resources

ROOT = Path(__file__).resolve().parent.parent
PYTHON = Path(sys.executable)
#: Few distinct images, as in a real cluster: jobs share the team's training images.
IMAGES = 20
TARGET_SECONDS = 60

# Three shapes, cycled, each one the job construct accepts (docs/training.md, "Job shapes"):
# all-reduce on GPUs (the Master is one more worker, so it has the Workers' GPU), parameter
# servers (the Chief is the CPU-only coordinator), all-reduce with a Chief and an evaluator.
SHAPES = (
    "  Master: {{cpu: 2, cpuLimit: 4, memory: 4Gi, memoryLimit: 8Gi, gpus: 1}}\n"
    "  Worker: {{replicas: {workers}, cpu: 2, cpuLimit: 4, memory: 4Gi, memoryLimit: 8Gi, gpus: 1}}\n",
    "  Chief: {{cpu: 1, memory: 2Gi}}\n"
    "  Worker: {{replicas: {workers}, cpu: 1, cpuLimit: 2, memory: 2Gi, memoryLimit: 4Gi}}\n"
    "  PS: {{replicas: 2, cpu: 2, memory: 8Gi}}\n",
    "  Chief: {{cpu: 2, memory: 4Gi, gpus: 1}}\n"
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


def job_demand(folder: Path) -> Resources:
    """What the generated jobs (bench-*.yaml) ask of the mixed pool: every replica, memory at its limit."""
    total = Resources(0, 0, 0)
    for path in sorted(folder.glob("bench-*.yaml")):
        for role in yaml.safe_load(path.read_text())["roles"].values():
            memory = role.get("memoryLimit", role["memory"])
            total += Resources(quantity.millicores(role["cpu"]), quantity.to_bytes(memory),
                               role.get("gpus", 0)).times(role.get("replicas", 1))
    return total


def cluster_for(config: config_mod.Config, jobs_dir: Path) -> cluster_mod.Cluster:
    """colocate.yaml's cluster with its mixed pool grown by the nodes the generated jobs take and its
    training quota by their checkpoint claims: the quota is that pool's allocatable, and synth
    refuses jobs past it (COL051), as a platform would grow both before adding a thousand jobs."""
    reference = config.cluster
    mixed = reference.pool(reference.mixed_pool)
    need, node = job_demand(jobs_dir), mixed.allocatable
    extra = max(math.ceil(need.cpu_milli / node.cpu_milli), math.ceil(need.memory_bytes / node.memory_bytes),
                math.ceil(need.gpus / node.gpus) if node.gpus else 0)
    pools = tuple(replace(p, nodes=p.nodes + extra) if p.name == mixed.name else p for p in reference.pools)
    jobs = len(list(jobs_dir.glob("bench-*.yaml")))  # one checkpoint claim each
    return replace(reference, pools=pools, training_claims=reference.training_claims + jobs)


def synth_with_jobs(outdir: Path, jobs_dir: Path) -> None:
    """synth of the reference plus the jobs in ``jobs_dir``, on the cluster they need."""
    app.synth(outdir, jobs_dir=jobs_dir, cluster=cluster_for(config_mod.load(), jobs_dir))


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=environment(), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"{' '.join(args[:3])} ... exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return elapsed


def synth_command(outdir: Path, jobs_dir: Path) -> list[str]:
    """synth_with_jobs in a fresh process, as CI runs synth."""
    return [str(PYTHON), "-c", "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[3]); "
            "from bench import synth_with_jobs; synth_with_jobs(Path(sys.argv[1]), Path(sys.argv[2]))",
            str(outdir), str(jobs_dir), str(Path(__file__).resolve().parent)]


def run(n: int, scratch: Path) -> tuple[float, float, int]:
    jobs_dir, outdir = scratch / f"jobs-{n}", scratch / f"dist-{n}"
    write_jobs(jobs_dir, n)
    synth = timed(synth_command(outdir, jobs_dir))
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

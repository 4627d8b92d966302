#!/usr/bin/env python3
"""Benchmark of `colocate check` against its floor and against checkov, on generated inputs.

Inputs (written to a temporary folder):
  * mixes of 1,000 and 10,000 objects (--counts): the API objects of the reference dist/apps/
    (its rendered upstream folders left out) cycled and renamed (Deployments, TFJobs, PrometheusRules, dashboards, quotas ... in dist/'s
    proportions), 50 per file;
  * workload mixes of 10,000 objects (--workload-counts): per 4 objects, a TFJob (Chief, PS and 2
    GPU Workers, each with env and a checkpoint mount), its checkpoint claim, an online Deployment
    and a ConfigMap, as the reference dist/ writes them, renamed (the claim with its job), 50 per
    file: what a cluster of many jobs looks like to check;
  * optionally one file of small ConfigMaps (--big-mib 50).
For each it runs, each in a fresh process, --runs times (default 3), and prints the median wall
time; peak memory (largest RSS of the process tree's members, from wait4) of the cold run:
  * check cold: colocate check with an empty verdict cache (start-up and imports included);
  * check --no-cache: the same without any cache;
  * check warm-incremental: the cache filled by the tree, then one file changed (an object
    added to it; another file each run);
  * check unchanged: the cache filled, nothing changed;
  * the floor: kubeconform alone (as check runs it) and yaml.CSafeLoader loading the same files,
    concurrently (check cannot be faster than the slower of the two);
  * checkov 3.3.30 --framework kubernetes, installed by this script into .bench/checkov-venv
    (from PyPI) on first use.
Ratios are of medians measured in this run; the load average is printed before and after, as
2 cores shared with other work move every figure. Figures, not a test: `make bench` runs it
after the synth benchmark.
Targets (2 cores): cold <= 1.3x the floor on 10,000 objects of either mix and <= 1.5x on 1,000;
warm-incremental < 0.5 s and unchanged < 0.3 s on 10,000; < 300 MB.
"""
from __future__ import annotations

import argparse
import copy
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from colocate.checker import kubeconform  # noqa: E402
from colocate.base.go_builds import environment  # noqa: E402

CHECKOV_VERSION = "3.3.30"
CHECKOV_VENV = ROOT / ".bench" / "checkov-venv"
PER_FILE = 50
MIB = 1024 * 1024


def templates() -> list[dict]:
    """dist/apps/'s objects, except the folders rendered from upstream charts (their twenty CRDs of
    up to 350 KB each would make the mix a CRD benchmark; the mix stays the one the targets were
    set on)."""
    index = yaml.safe_load((ROOT / "dist" / "index.yaml").read_text())
    rendered = {f for f, entry in index["folders"].items() if "rendered" in entry}
    docs = []
    for path in sorted((ROOT / "dist" / "apps").rglob("*.yaml")):
        if path.parent.relative_to(ROOT / "dist").as_posix() in rendered:
            continue
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") not in ("Application",):
            docs.append(doc)
    return docs


def write_mix(folder: Path, n: int) -> None:
    base = templates()
    docs = []
    for i in range(n):
        doc = copy.deepcopy(base[i % len(base)])
        doc["metadata"]["name"] = f"{doc['metadata']['name']}-{i // len(base)}"[:63].rstrip("-")
        docs.append(doc)
    _write_files(folder, docs)


def _write_files(folder: Path, docs: list[dict]) -> None:
    """``docs``, PER_FILE to a file, in ``folder`` (made here)."""
    folder.mkdir(parents=True)
    for start in range(0, len(docs), PER_FILE):
        (folder / f"objects-{start // PER_FILE:05d}.yaml").write_text(
            yaml.dump_all(docs[start:start + PER_FILE], Dumper=yaml.CSafeDumper, sort_keys=False), encoding="utf-8")


#: The workload mix's four objects, from the reference dist/.
WORKLOAD = ("apps/training/tfjob.training.tf-ps-mode.yaml", "apps/training/persistentvolumeclaim.training.tf-ps-mode-checkpoints.yaml",
            "apps/online/deployment.online.recsys-inference.yaml", "apps/monitoring/configmap.monitoring.dcgm-exporter-counters.yaml")


def write_workload_mix(folder: Path, n: int) -> None:
    tfjob, claim, deployment, configmap = (yaml.safe_load((ROOT / "dist" / f).read_text()) for f in WORKLOAD)
    docs = []
    for i in range(n):
        group, which = divmod(i, 4)
        doc = copy.deepcopy((tfjob, claim, deployment, configmap)[which])
        if which < 2:  # the job and its claim: the job's every mount names the renamed claim
            job = f"job-{group}"
            doc["metadata"]["name"] = job if which == 0 else f"{job}-checkpoints"
            if which == 0:
                for spec in doc["spec"]["tfReplicaSpecs"].values():
                    for volume in spec["template"]["spec"].get("volumes", []):
                        if "persistentVolumeClaim" in volume:
                            volume["persistentVolumeClaim"]["claimName"] = f"{job}-checkpoints"
        else:
            doc["metadata"]["name"] = f"{doc['metadata']['name']}-{group}"[:63].rstrip("-")
        docs.append(doc)
    _write_files(folder, docs)


def write_big_file(path: Path, size: int) -> int:
    """Small ConfigMaps until ``size`` bytes; returns how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count, written = 0, 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            text = (f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-{count}\n  namespace: online\n"
                    f"data:\n  level: info\n  region: eu-{count % 7}\n---\n")
            out.write(text)
            written += len(text)
            count += 1
    return count


def measure(command: list[str], env: dict | None = None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MB of the largest process, exit code)."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, env=env or environment(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    # ru_maxrss of wait4 is the process's own peak (KiB on Linux); children it waited for are
    # folded into its RUSAGE_CHILDREN, which a wrapper reports below.
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


_TREE = ("import os, resource, subprocess, sys\n"
         "code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
         "sys.exit(code)\n")


def measure_tree(command: list[str]) -> tuple[float, float, int]:
    """Like measure, but the peak over the whole process tree (kubeconform under check)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _TREE, *command], cwd=ROOT, env=environment(),
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = int((proc.stderr.strip().splitlines() or ["0"])[-1]) / 1024
    return wall, peak, proc.returncode


_FLOOR = ("import subprocess, sys, yaml\n"
          "from pathlib import Path\n"
          "kc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
          "root = Path(sys.argv[1])\n"
          "files = [root] if root.is_file() else sorted(root.rglob('*.yaml'))\n"
          "for f in files:\n"
          "    list(yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader))\n"
          "kc.wait()\n")


def checkov() -> Path:
    exe = CHECKOV_VENV / "bin" / "checkov"
    if not exe.exists():
        print(f"installing checkov {CHECKOV_VERSION} into {CHECKOV_VENV} (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(CHECKOV_VENV)], check=True)
        subprocess.run([str(CHECKOV_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        f"checkov=={CHECKOV_VERSION}"], check=True)
    return exe


def floor_command(target: Path) -> list[str]:
    kc = [kubeconform.binary(), "-strict", "-summary", "-output", "json", "-kubernetes-version", "1.28.0"]
    for location in kubeconform.schema_locations("1.28.0"):
        kc += ["-schema-location", location]
    return [sys.executable, "-c", _FLOOR, str(target), *kc, str(target)]


def median_of(runs: int, once) -> tuple[float, float, int]:
    """(median wall, largest peak MB, last exit code) of ``once()`` run ``runs`` times."""
    results = [once(i) for i in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results), results[-1][2]


def _edit(target: Path, i: int) -> None:
    """One more object in one file (a different file each time): a real change of the tree."""
    files = sorted(target.rglob("*.yaml")) if target.is_dir() else [target]
    path = files[(i * 7) % len(files)]
    with path.open("a", encoding="utf-8") as out:
        out.write(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-edit-{i}\n  namespace: online\n"
                  f"data:\n  edit: \"{i}\"\n")


def row(target: Path, runs: int, with_checkov: bool, work: Path) -> dict:
    colocate = str(Path(sys.executable).parent / "colocate")
    check = [colocate, "check", str(target)]
    out: dict = {}
    out["floor"] = median_of(runs, lambda i: measure_tree(floor_command(target)))
    out["no_cache"] = median_of(runs, lambda i: measure_tree(check + ["--no-cache"]))

    def cold(i: int):
        cache = work / f"cold-{target.name}-{i}"
        shutil.rmtree(cache, ignore_errors=True)
        return measure_tree(check + ["--cache", str(cache)])
    out["cold"] = median_of(runs, cold)
    cache = ["--cache", str(work / f"warm-{target.name}")]
    measure_tree(check + cache)  # fill it

    def incremental(i: int):
        _edit(target, i)
        return measure_tree(check + cache)
    out["incremental"] = median_of(runs, incremental)
    out["unchanged"] = median_of(runs, lambda i: measure_tree(check + cache))
    if with_checkov:
        out["checkov"] = median_of(runs, lambda i: measure_tree(
            [str(checkov()), "--framework", "kubernetes", "--quiet", "--compact", "-o", "json",
             "-d" if target.is_dir() else "-f", str(target)]))
    return out


def startup() -> float:
    """Median wall time of importing what `colocate check` imports, in a fresh interpreter."""
    code = "import colocate.cli, colocate.checker, colocate.checker.formats, colocate.checker.verdict_cache"
    return statistics.median(measure([sys.executable, "-c", code])[0] for _ in range(5))


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--workload-counts", type=int, nargs="*", default=[10000],
                        help="sizes of the workload mix (TFJobs, claims, Deployments, ConfigMaps; none: skip it)")
    parser.add_argument("--big-mib", type=int, default=0, help="also a file of small objects of this size (0: none)")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is printed (default 3)")
    parser.add_argument("--no-checkov", action="store_true", help="skip checkov (it takes minutes)")
    parser.add_argument("--checkov-upto", type=int, default=10000,
                        help="run checkov only on inputs of at most this many objects (default 10000)")
    args = parser.parse_args()
    # Compiled once, as an installed colocate is: a run that may not write bytecode recompiles
    # every module (0.1 s of each start-up).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "colocate"), str(ROOT / "policies")],
                   stdout=subprocess.DEVNULL, check=False)
    print(f"before: {load()}")
    print(f"start-up (imports of check, median of 5): {startup():.3f} s")
    print(f"median wall seconds of {args.runs} runs; x = / floor; checkov x = checkov / check cold; "
          "MB = peak RSS of the cold check")
    head = (f"{'input':<16} {'objects':>7} {'floor':>7} {'cold':>7} {'x':>5} {'no-cache':>8} {'x':>5} "
            f"{'1 changed':>9} {'unchanged':>9} {'MB':>5} {'checkov':>8} {'x':>6}")
    print(head)
    with tempfile.TemporaryDirectory(prefix="colocate-bench-check-") as tmp:
        inputs = []
        for n in args.counts:
            folder = Path(tmp) / f"mix-{n}"
            write_mix(folder, n)
            inputs.append((f"mix of {n:,}", n, folder))
        for n in args.workload_counts:
            folder = Path(tmp) / f"workload-{n}"
            write_workload_mix(folder, n)
            inputs.append((f"workload {n:,}", n, folder))
        if args.big_mib:
            big = Path(tmp) / "big" / "configmaps.yaml"
            inputs.append((f"{args.big_mib} MiB file", write_big_file(big, args.big_mib * MIB), big))
        # Not timed: the first run after a change of code compiles it, the first check of a
        # Kubernetes version copies its schemas.
        measure_tree([str(Path(sys.executable).parent / "colocate"), "check", "--no-cache", str(inputs[0][2])])
        for label, objects, target in inputs:
            r = row(target, args.runs, not args.no_checkov and objects <= args.checkov_upto, Path(tmp))
            floor, cold = r["floor"][0], r["cold"][0]
            ck = f"{r['checkov'][0]:>8.1f} {r['checkov'][0] / cold:>5.1f}x" if "checkov" in r else f"{'-':>8} {'-':>6}"
            print(f"{label:<16} {objects:>7} {floor:>7.2f} {cold:>7.2f} {cold / floor:>4.2f}x "
                  f"{r['no_cache'][0]:>8.2f} {r['no_cache'][0] / floor:>4.2f}x {r['incremental'][0]:>9.2f} "
                  f"{r['unchanged'][0]:>9.2f} {r['cold'][1]:>5.0f} {ck}  (check exit {r['cold'][2]})", flush=True)
    print(f"after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark of `colocate check` against its floor and against checkov, on generated inputs.

Inputs (written to a temporary folder):
  * mixes of 1,000, 10,000 and 50,000 objects: the API objects of the reference dist/ cycled
    and renamed (Deployments, TFJobs, PrometheusRules, dashboards, quotas ... in dist/'s
    proportions), 50 per file;
  * one 50 MiB file of small ConfigMaps.
For each it runs, each in a fresh process, and prints wall time and peak memory (largest RSS of
the process tree's members, from wait4):
  * colocate check;
  * the floor: kubeconform alone (as check runs it) and yaml.CSafeLoader loading the same
    files, concurrently (check cannot be faster than the slower of the two);
  * checkov 3.3.30 --framework kubernetes, installed by this script into .bench/checkov-venv
    (from PyPI) on first use.
Figures, not a test: `make bench` runs it after the synth benchmark.
Targets (2 cores): 10,000 objects <= 4 s, >= 15x faster than checkov, < 300 MB; the 50 MiB file
< 30 s and < 1 GB.
"""
from __future__ import annotations

import argparse
import copy
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from colocate import kubeconform  # noqa: E402
from colocate.toolchain import environment  # noqa: E402

CHECKOV_VERSION = "3.3.30"
CHECKOV_VENV = ROOT / ".bench" / "checkov-venv"
PER_FILE = 50
MIB = 1024 * 1024


def templates() -> list[dict]:
    docs = []
    for path in sorted((ROOT / "dist" / "apps").rglob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if isinstance(doc, dict) and doc.get("kind") not in ("Application",):
            docs.append(doc)
    return docs


def write_mix(folder: Path, n: int) -> None:
    base = templates()
    folder.mkdir(parents=True)
    batch: list[dict] = []
    for i in range(n):
        doc = copy.deepcopy(base[i % len(base)])
        doc["metadata"]["name"] = f"{doc['metadata']['name']}-{i // len(base)}"[:63].rstrip("-")
        batch.append(doc)
        if len(batch) == PER_FILE or i == n - 1:
            (folder / f"objects-{i // PER_FILE:05d}.yaml").write_text(
                yaml.dump_all(batch, Dumper=yaml.CSafeDumper, sort_keys=False), encoding="utf-8")
            batch = []


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


def row(label: str, objects: int, target: Path, with_checkov: bool) -> dict:
    colocate = str(Path(sys.executable).parent / "colocate")
    check = measure_tree([colocate, "check", str(target)])
    kc = [kubeconform.binary(), "-strict", "-summary", "-output", "json", "-kubernetes-version", "1.28.0"]
    for location in kubeconform.schema_locations("1.28.0"):
        kc += ["-schema-location", location]
    floor = measure_tree([sys.executable, "-c", _FLOOR, str(target), *kc, str(target)])
    out = {"input": label, "objects": objects, "check_s": check[0], "check_mb": check[1], "check_exit": check[2],
           "floor_s": floor[0], "floor_mb": floor[1]}
    if with_checkov:
        ck = measure_tree([str(checkov()), "--framework", "kubernetes", "--quiet", "--compact", "-o", "json",
                           "-d" if target.is_dir() else "-f", str(target)])
        out.update(checkov_s=ck[0], checkov_mb=ck[1])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="*", default=[1000, 10000, 50000])
    parser.add_argument("--big-mib", type=int, default=50, help="size of the file of small objects (0: skip)")
    parser.add_argument("--no-checkov", action="store_true", help="skip checkov (it takes minutes)")
    parser.add_argument("--checkov-upto", type=int, default=10000,
                        help="run checkov only on inputs of at most this many objects (default 10000)")
    args = parser.parse_args()
    print("wall seconds and peak RSS (MB) of: colocate check | the floor (kubeconform alone + yaml.CSafeLoader, "
          f"concurrently) | checkov {CHECKOV_VERSION}; x = checkov / check")
    print(f"{'input':<22} {'objects':>8} {'check s':>8} {'MB':>6} {'floor s':>8} {'MB':>6} {'checkov s':>10} {'MB':>6} {'x':>6}")
    with tempfile.TemporaryDirectory(prefix="colocate-bench-check-") as tmp:
        inputs = []
        for n in args.counts:
            folder = Path(tmp) / f"mix-{n}"
            write_mix(folder, n)
            inputs.append((f"mix of {n:,}", n, folder))
        if args.big_mib:
            big = Path(tmp) / "big" / "configmaps.yaml"
            inputs.append((f"{args.big_mib} MiB file", write_big_file(big, args.big_mib * MIB), big))
        for label, objects, target in inputs:
            r = row(label, objects, target, not args.no_checkov and objects <= args.checkov_upto)
            skipped = "--no-checkov" if args.no_checkov else f"--checkov-upto {args.checkov_upto}"
            ck = f"{r['checkov_s']:>10.1f} {r['checkov_mb']:>6.0f} {r['checkov_s'] / r['check_s']:>5.1f}x" \
                if "checkov_s" in r else f"{'-':>10} {'-':>6} {'-':>6}"
            note = "" if "checkov_s" in r else f", checkov skipped ({skipped})"
            print(f"{label:<22} {objects:>8} {r['check_s']:>8.1f} {r['check_mb']:>6.0f} {r['floor_s']:>8.1f} "
                  f"{r['floor_mb']:>6.0f} {ck}  (check exit {r['check_exit']}{note})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

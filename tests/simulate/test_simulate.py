"""colocate simulate with the real components: the reference dist/ places every pod at night and
at peak, each fault class is reported with the real component's own message, and no process a
simulation started survives it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from colocate import ROOT
from colocate.simulate import toolchain
from tests.helpers import VENV_BIN, colocate

DIST = ROOT / "dist"


@pytest.fixture(scope="module", autouse=True)
def components():
    """Build the pinned components (make test builds them first; a no-op then). Go missing is a
    failure that says how to install it, never a skip."""
    toolchain.ensure(log=lambda line: None)


def simulate(*args: str) -> tuple[subprocess.CompletedProcess, dict]:
    proc = colocate("simulate", *args, "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    return proc, json.loads(proc.stdout)


def survivors() -> list[str]:
    """Processes whose working folder is a simulation's (every component runs in its folder)."""
    out = []
    for proc in Path("/proc").iterdir():
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if "/colocate-simulate-" in cwd:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ")[:120]
            out.append(f"{proc.name}: {command!r}")
    return out


@pytest.fixture(scope="module")
def night():
    return simulate(str(DIST))


@pytest.fixture(scope="module")
def peak():
    return simulate(str(DIST), "--scenario", "peak")


def test_reference_night_places_every_pod(night):
    proc, report = night
    assert proc.returncode == 0, proc.stdout
    assert report["ok"] and report["rejected"] == [] and report["failed_creates"] == []
    pods = report["pods"]
    assert pods and all(p["node"] for p in pods), [p for p in pods if not p["node"]]
    # Every reference TFJob made its pods and runs; every pool got its nodes.
    assert report["tfjobs"] and set(report["tfjobs"].values()) == {"Running"}, report["tfjobs"]
    training = [p for p in pods if p["owner"].startswith("TFJob/")]
    assert {p["owner"] for p in training} == {f"TFJob/{name.split('/')[1]}" for name in report["tfjobs"]}
    assert {n["pool"] for n in report["nodes"]} == {"online", "mixed", "monitoring"}
    # Online pods land on the online pool first (weight-100 preference).
    online = [p for p in pods if p["tier"] == "online"]
    assert online and all(p["node"].startswith("online-") for p in online), online


def test_peak_places_every_online_pod_and_lists_the_preempted_training_pods(peak):
    proc, report = peak
    assert proc.returncode == 0, proc.stdout
    online = [p for p in report["pods"] if p["tier"] == "online"]
    peak_replicas = int(yaml.safe_load((DIST / "apps/online/deployment.online.recsys-inference.yaml").read_text())
                        ["metadata"]["annotations"]["colocate.io/peak-replicas"])
    assert len(online) == peak_replicas and all(p["node"] for p in online), online
    assert report["preemptions"], "peak must preempt training to place the online pods"
    for p in report["preemptions"]:
        assert p["victim"].startswith("training/") and p["preemptor"].startswith("online/recsys-inference-"), p
    # The real training-operator v1.7.0 fails a TFJob whose pod is preempted (docs/simulate.md):
    # the report names each such job, and the scenario (offline work may be preempted) still passes.
    lost = {job for job in report["tfjobs"] if any(p["victim"].startswith(job + "-") for p in report["preemptions"])}
    assert lost and set(report["failed_by_preemption"]) == lost and report["failed_jobs"] == [], report
    text = colocate("simulate", str(DIST), "--scenario", "peak")
    assert text.returncode == 0, text.stdout
    assert "Preempted:" in text.stdout and "TFJobs failed by preemption:" in text.stdout, text.stdout


def test_no_process_survives_a_simulation(night, peak):
    assert survivors() == []


def test_ctrl_c_stops_every_process(tmp_path):
    proc = subprocess.Popen([str(VENV_BIN / "colocate"), "simulate", str(DIST)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    for line in proc.stderr:
        if "control plane up" in line:
            break
    assert survivors(), "the simulation's components should be running now"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert survivors() == []


def test_unusable_input_is_exit_2(tmp_path):
    proc = colocate("simulate", str(tmp_path))
    assert proc.returncode == 2 and "no node pool descriptions" in proc.stderr, proc.stderr
    proc = colocate("simulate", str(DIST), "--scenario", "noon")
    assert proc.returncode == 2 and "--scenario:noon: no such scenario; shipped: " in proc.stderr, proc.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("scale: {online/recsys-inference: 3}\n")
    proc = colocate("simulate", str(DIST), "--scenario", str(bad))
    assert proc.returncode == 2 and "is not a workload: write Deployment/<namespace>/<name>" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr

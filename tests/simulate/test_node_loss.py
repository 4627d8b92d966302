"""A mixed node that stops reporting (``loseNode`` mode ``notReady``) in the real components:
its pods are deleted by the taint manager and stay Terminating, the resubmitter reports each
blocked resubmission (Event and gauge) instead of dropping it, and the runbook's out-of-service
taint (docs/runbook-node-loss.md) lets the jobs come back within the step."""
from __future__ import annotations

import json

import pytest

from colocate import ROOT
from tests.helpers import colocate
from tests.simulate.test_simulate import TAG

SCENARIO = ROOT / "tests" / "fixtures" / "scenarios" / "node-loss.yaml"


@pytest.fixture(scope="module")
def run():
    proc = colocate("simulate", str(ROOT / "dist"), "--scenario", str(SCENARIO), "--format", "json", env=TAG)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    return {st["name"]: st for st in report["steps"]}, report


def test_a_silent_node_blocks_the_resubmission_and_the_run_says_so(run):
    steps, _ = run
    lost = steps["node lost"]
    assert any("stopped reporting" in a for a in lost["actions"]), lost["actions"]
    blocked = [*lost["blocked"], *steps["blocked"]["blocked"]]
    assert blocked and all("terminating on node" in b and "out-of-service" in b for b in blocked), blocked
    # The gauge the alert reads, scraped from the resubmitter, while nothing is re-created.
    assert steps["blocked"]["blocked_gauge"], steps["blocked"]
    # The blocked jobs are not re-created (the jobs on the other nodes run on: not counted here).
    assert steps["blocked"]["resubmissions"] == 0, steps["blocked"]
    assert all(steps["blocked"]["tfjobs"].get(job) != "Running" for job in steps["blocked"]["blocked_gauge"]), steps["blocked"]


def test_the_runbook_taint_lets_the_jobs_come_back_within_the_step(run):
    steps, report = run
    after = steps["out of service"]
    assert any("declared out of service" in a for a in after["actions"]), after["actions"]
    assert after["resubmissions"] >= len(steps["blocked"]["blocked_gauge"]), after
    assert after["training_running"] > 0 and not after["blocked_gauge"], after
    assert set(report["tfjobs"].values()) == {"Running"}, report["tfjobs"]
    assert not report["failed_jobs"] and not report["given_up"], report

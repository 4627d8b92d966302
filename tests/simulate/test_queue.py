"""``colocate simulate --scenario queue`` on the reference: a day whose jobs ask for twice the
night's GPUs, in the real components with Kueue admitting training (docs/queue.md)."""
from __future__ import annotations

import json

import pytest

from colocate import ROOT
from colocate.config import load
from tests.helpers import colocate
from tests.simulate.test_simulate import TAG

DIST = ROOT / "dist"
FIRST_NIGHT = [f"{h:02d}:00" for h in range(0, 7)]  # 07:00 is the spike's


@pytest.fixture(scope="module")
def run():
    proc = colocate("simulate", str(DIST), "--scenario", "queue", "--format", "json", env=TAG)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    return {st["name"]: st for st in report["steps"]}, report


def _gpus(step, pool="mixed"):
    (use,) = [u for u in step["use"] if u["pool"] == pool and u["resource"] == "gpu"]
    return use


def _hold_hours():
    """The steps between the schedule's pause and its resume (steps.plan puts each action in the
    first hour step at or after its time)."""
    schedule = load().schedule
    pause, resume = -(-schedule.pause_at // 60), -(-schedule.resume_at // 60)
    return [f"{h:02d}:00" for h in range(pause, resume)]


def test_the_queue_fills_the_night_with_what_online_leaves_free(run):
    steps, _ = run
    for name in FIRST_NIGHT:
        use = _gpus(steps[name])
        free = use["allocatable"] - use["requested"].get("online", 0)
        assert use["requested"].get("offline", 0) >= 0.9 * free, (name, use)


def test_jobs_beyond_the_night_wait_in_the_queue_and_start_in_arrival_order(run):
    steps, _ = run
    # Twice the night asked for: the three jobs merged last wait, and each starts when a job
    # before it finishes, oldest first.
    since = steps["00:00"]["waiting_since"]
    assert sorted(since) == ["training/asr-train", "training/ctr-train", "training/resnet-train"], steps["00:00"]
    # Kueue's order is the creation time, to the second: jobs merged within one second tie, and
    # either may go first. Whoever leaves the queue arrived no later than whoever still waits.
    for hour, waiting in (("02:00", 2), ("04:00", 1)):
        still = steps[hour]["waiting_since"]
        assert len(still) == waiting and set(still) <= set(since), (hour, steps[hour])
        assert max(since[j] for j in since if j not in still) <= min(since[j] for j in still), (hour, since, still)
    assert steps["06:00"]["queue_waiting"] == 0 and steps["06:00"]["tfjobs"]["training/asr-train"] == "Running"
    # Kueue says why a job waits: the quota, not a guess.
    assert "nvidia.com/gpu" in steps["00:00"]["waiting_reason"]["training/asr-train"], steps["00:00"]


def test_no_training_pod_runs_while_the_day_holds_the_queue(run):
    steps, _ = run
    hold = _hold_hours()
    # Just before the pause, a spike preempts training and the resubmitter re-creates the jobs:
    # they go back through the queue, so the hold holds them too.
    spike = steps["07:00"]
    assert "spike" in spike["actions"] and spike["preemptions"] >= 1 and spike["resubmissions"] >= 1, spike
    assert "offline pause" in " ".join(steps[hold[0]]["actions"]), steps[hold[0]]["actions"]
    for name in hold:
        assert steps[name]["training_running"] == 0 and steps[name]["training_pending"] == 0, (name, steps[name])
        assert steps[name]["queue_admitted"] == 0, (name, steps[name])
    # The job merged at 10:00 arrives during the hold and waits.
    assert any("job late-eval added to git" in a for a in steps["10:00"]["actions"]), steps["10:00"]["actions"]
    assert steps["10:00"]["tfjobs"]["training/late-eval"] == "Suspended"
    assert "training/late-eval" in steps[hold[-1]]["waiting_since"]


def test_the_next_night_admits_the_held_jobs_and_the_job_merged_by_day(run):
    steps, report = run
    resumed = steps[f"{-(-load().schedule.resume_at // 60):02d}:00"]
    assert any("offline resume" in a for a in resumed["actions"]), resumed["actions"]
    assert resumed["queue_admitted"] >= 3 and resumed["training_running"] > 0, resumed
    final = report["tfjobs"]
    assert final["training/late-eval"] == "Running", final
    assert set(final.values()) <= {"Running", "Succeeded"}, final
    assert not report["failed_jobs"] and not report["given_up"], report


def test_no_job_holds_gpus_while_its_other_pods_wait(run):
    # Kueue admits a job only when the quota holds all its pods, and the quota is the pool's
    # allocatable: no step sees a job with pods placed and pods waiting (docs/queue.md).
    steps, _ = run
    partly = {name: st["partly_placed"] for name, st in steps.items() if st["partly_placed"]}
    assert not partly, partly


def test_the_resume_admits_in_order_as_far_as_jobs_fit(run):
    # BestEffortFIFO (docs/queue.md): the held jobs come back in creation order, and one that does
    # not fit what is left lets a later, smaller one in; it waits for the quota, nothing else.
    steps, _ = run
    resumed = steps[f"{-(-load().schedule.resume_at // 60):02d}:00"]
    assert "training/late-eval" not in resumed["waiting_since"], resumed
    for job, reason in resumed["waiting_reason"].items():
        assert "insufficient unused quota for nvidia.com/gpu" in reason, (job, reason)

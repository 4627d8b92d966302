"""`colocate diff` says how much training waits in Kueue's queue (colocate/review/queue.py,
docs/queue.md): per ClusterQueue, before and after, the jobs the first night admits and the ones
that wait, the GPUs waiting against the queue's GPU quota, and the jobs that newly wait. A job
past tonight's quota waits; it is no pool or quota overrun.

The trees are the reference dist/, committed, and the working tree with two more copies of
recsys-train (4 GPU Workers each): the reference's jobs ask for 8 of the ClusterQueue's 12 GPUs,
so the first copy fits (12 of 12) and the second, later in name order, waits. The waiting copy
expects 2.5 hours (the ``colocate.io/expected-hours`` a job file's ``expectedHours`` becomes):
4 GPUs x 2.5 h = 10 GPU-hours, against the night's 12 GPUs x 9 h 50 min (22:00 to the 07:50
pause in colocate.yaml) = 118."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from colocate import ROOT
from colocate.model.names import EXPECTED_HOURS_ANNOTATION, GPU
from tests.helpers import colocate, git, yaml_load

TRAINING = Path("apps/training")
QUEUE = Path("apps/kueue/clusterqueue.training.yaml")
FITS, WAITS = "x-train-a", "x-train-b"


def _committed_dist(repo: Path) -> Path:
    shutil.copytree(ROOT / "dist", repo / "dist")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo / "dist"


def _add_job(dist: Path, name: str, like: str = "recsys-train", hours: str | None = None) -> None:
    text = (dist / TRAINING / f"tfjob.training.{like}.yaml").read_text()
    assert f"  name: {like}\n" in text and "  annotations:\n" in text
    text = text.replace(f"  name: {like}\n", f"  name: {name}\n")
    if hours is not None:
        text = text.replace("  annotations:\n", f"  annotations:\n    {EXPECTED_HOURS_ANNOTATION}: '{hours}'\n")
    (dist / TRAINING / f"tfjob.training.{name}.yaml").write_text(text)


def _diff(repo: Path, *args: str, code: int = 0):
    proc = colocate("diff", "main", "--no-policy", *args, cwd=repo)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("queue") / "repo"
    dist = _committed_dist(repo)
    quota = yaml_load((dist / QUEUE).read_text())["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert int({r["name"]: r["nominalQuota"] for r in quota}[GPU]) == 12, "the figures below assume 12 GPUs"
    _add_job(dist, FITS)
    _add_job(dist, WAITS, hours="2.5")
    return repo


def test_json_gives_each_side_of_the_queue_and_the_job_that_newly_waits(repo):
    doc = json.loads(_diff(repo, "--format", "json").stdout)
    (queue,) = doc["queues"]
    assert queue["clusterQueue"] == "training"
    before, after = queue["before"], queue["after"]
    assert (len(before["jobs"]), before["admitted"], before["waiting"], before["waitingGpus"]) == (3, 3, 0, 0)
    assert (len(after["jobs"]), after["admitted"], after["waiting"], after["waitingGpus"]) == (5, 4, 1, 4)
    assert before["quota"]["gpus"] == after["quota"]["gpus"] == 12
    assert after["demand"]["gpus"] == 8 + 4 + 4
    assert [j["name"] for j in queue["newlyWaiting"]] == [f"training/{WAITS}"]
    assert queue["newlyWaiting"][0]["requests"]["gpus"] == 4
    assert queue["newlyAdmitted"] == []
    assert queue["newlyWaiting"][0]["hours"] == 2.5
    assert (before["waitingGpuHours"], after["waitingGpuHours"]) == (0, 10) and after["unestimated"] == []
    assert after["nightHours"] == pytest.approx(9 + 50 / 60) and after["nightGpuHours"] == pytest.approx(118)
    # The waiting job is suspended: the pool and the namespace's quota hold the admitted 12 GPUs,
    # not 16 (past the mixed pool's 12 and the quota's 12: the change would read as a failure).
    gpus = {(d["tier"], d["after"]) for d in doc["capacity"] if d["pool"] == "mixed" and d["resource"] == GPU}
    assert ("offline", 12) in gpus, doc["capacity"]
    assert all(d["after"] <= d["allocatable"] for d in doc["capacity"] if d["allocatable"] is not None), doc["capacity"]
    used = {q["resource"]: q["used_after"] for q in doc["quota"] if q["quota"] == "training-quota"}
    assert used[f"requests.{GPU}"] == 12, doc["quota"]
    assert all(q["used_after"] <= q["hard_after"] for q in doc["quota"] if q["hard_after"] is not None), doc["quota"]


def test_text_says_the_job_waits_in_the_queue_not_that_a_pool_is_over(repo):
    text = _diff(repo).stdout
    headline = text.splitlines()[0]
    assert headline.endswith("; 1 job newly waits in the queue"), headline
    assert "over allocatable" not in headline and "quotas exceeded" not in headline, headline
    assert (f"  training: jobs 3 -> 5, admitted 3 -> 4, waiting 0 -> 1; {GPU} waiting 0 -> 4 of quota 12; "
            "GPU-hours waiting 0 -> 10 of the night's 118\n") in text, text
    assert f"    + training/{WAITS} (4 {GPU} x 2.5 h = 10 GPU-hours) waits in the queue: " in text, text
    assert f"training/{FITS} (" not in text, "the job that fits the night does not wait"


def test_markdown_has_the_queue_table_and_names_the_waiting_job(repo):
    text = _diff(repo, "--format", "markdown").stdout
    assert "#### Training queue" in text, text
    assert "| training | 3 → 5 | 3 → 4 | 0 → 1 | 0 → 4 | 12 | 0 → 10 | 118 |" in text, text
    assert f"- ⏳ training/{WAITS} (4 {GPU} x 2.5 h = 10 GPU-hours) waits in the queue: " in text, text
    assert "**2 objects differ in 1 Application (2 added, 0 removed, 0 changed); 0 dangerous; " \
           "1 job newly waits in the queue**" in text, text


def test_a_job_that_leaves_lets_the_waiting_one_in(tmp_path):
    dist = _committed_dist(tmp_path)
    for name in (FITS, WAITS):
        _add_job(dist, name)
    git(tmp_path, "checkout", "-qb", "feature")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "two more jobs")
    (dist / TRAINING / f"tfjob.training.{FITS}.yaml").unlink()
    proc = colocate("diff", "HEAD", "--no-policy", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (queue,) = json.loads(proc.stdout)["queues"]
    assert [j["name"] for j in queue["newlyAdmitted"]] == [f"training/{WAITS}"]
    assert queue["newlyWaiting"] == [] and queue["after"]["waiting"] == 0 and queue["before"]["waitingGpus"] == 4
    text = colocate("diff", "HEAD", "--no-policy", cwd=tmp_path).stdout
    assert f"    - training/{WAITS} (4 {GPU}, GPU-hours unknown: its job file gives no expectedHours) no longer " \
           "waits: the first night admits it" in text, text
    assert "newly wait" not in text.splitlines()[0], text


def test_without_a_cluster_queue_in_either_tree_diff_says_nothing_of_a_queue(tmp_path):
    shutil.copytree(ROOT / "dist", tmp_path / "dist")
    (tmp_path / "dist" / QUEUE).unlink()
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    _add_job(tmp_path / "dist", WAITS)
    assert "QUEUE" not in _diff(tmp_path).stdout
    assert "Training queue" not in _diff(tmp_path, "--format", "markdown").stdout
    assert json.loads(_diff(tmp_path, "--format", "json").stdout)["queues"] == []


def test_a_cluster_queue_only_in_the_change_is_reported_from_nothing(tmp_path):
    shutil.copytree(ROOT / "dist", tmp_path / "dist")
    kept = (tmp_path / "dist" / QUEUE).read_text()
    (tmp_path / "dist" / QUEUE).unlink()
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "dist" / QUEUE).write_text(kept)
    (queue,) = json.loads(_diff(tmp_path, "--format", "json").stdout)["queues"]
    assert queue["before"] is None and queue["after"]["admitted"] == 3 and queue["newlyWaiting"] == []
    assert "  training: jobs - -> 3, admitted - -> 3, waiting - -> 0;" in _diff(tmp_path).stdout


@pytest.mark.parametrize("command", ["diff", "capacity"])
def test_an_unreadable_queue_quota_is_exit_2_naming_the_file_and_field(tmp_path, command):
    dist = _committed_dist(tmp_path)
    path = dist / QUEUE
    text = path.read_text()
    assert "nominalQuota: '12'\n" in text
    path.write_text(text.replace("nominalQuota: '12'\n", "nominalQuota: lots\n"))
    proc = colocate(*(("diff", "main", "--no-policy") if command == "diff" else ("capacity", "dist")), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"dist/{QUEUE.as_posix()}" in proc.stderr and ".nominalQuota" in proc.stderr and "'lots'" in proc.stderr, \
        proc.stderr


def test_a_waiting_job_without_an_estimate_is_counted_apart_not_guessed(tmp_path):
    dist = _committed_dist(tmp_path)
    _add_job(dist, FITS, hours="6")  # admitted: its hours count nowhere
    _add_job(dist, WAITS, hours="2.5")
    _add_job(dist, "x-train-c")
    _add_job(dist, "x-train-d", like="tf-ps-mode")  # no GPU: needs no estimate, and fits the CPU left
    (queue,) = json.loads(_diff(tmp_path, "--format", "json").stdout)["queues"]
    after = queue["after"]
    assert [j["name"] for j in queue["newlyWaiting"]] == [f"training/{WAITS}", "training/x-train-c"]
    assert after["waitingGpuHours"] == 10 and after["unestimated"] == ["training/x-train-c"]
    text = _diff(tmp_path).stdout
    assert "GPU-hours waiting 0 -> 10 (+1 job without expectedHours) of the night's 118\n" in text, text
    assert f"    + training/x-train-c (4 {GPU}, GPU-hours unknown: its job file gives no expectedHours) waits" in text
    proc = colocate("capacity", "dist", cwd=tmp_path)
    row = next(line for line in proc.stdout.splitlines() if line.startswith("training "))
    assert "  10 (+1 job without expectedHours)  118  " in row, row


@pytest.mark.parametrize("hours", ["0", "-1", "nan", "inf", "six", "9000", "1e400"])
@pytest.mark.parametrize("command", ["diff", "capacity"])
def test_an_unreadable_expected_hours_is_exit_2_naming_the_file_and_field(tmp_path, command, hours):
    dist = _committed_dist(tmp_path)
    _add_job(dist, WAITS, hours=hours)
    proc = colocate(*(("diff", "main", "--no-policy") if command == "diff" else ("capacity", "dist")), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    where = f"dist/{TRAINING.as_posix()}/tfjob.training.{WAITS}.yaml:metadata.annotations.{EXPECTED_HOURS_ANNOTATION}"
    assert where in proc.stderr and f"'{hours}' is not a number of hours" in proc.stderr, proc.stderr


def test_each_side_of_the_queue_has_its_own_revisions_night(tmp_path):
    """A change that ends the day peak an hour earlier: the base's night is colocate.yaml's as
    the base had it (9 h 50 min), the change's is an hour longer."""
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(ROOT / "colocate.yaml", repo / "colocate.yaml")
    _committed_dist(repo)
    config = repo / "colocate.yaml"
    text = config.read_text()
    assert 'dayPeak: {start: "08:00", end: "22:00"}' in text
    config.write_text(text.replace('end: "22:00"', 'end: "21:00"'))
    (queue,) = json.loads(_diff(repo, "--format", "json").stdout)["queues"]
    assert queue["before"]["nightHours"] == pytest.approx(9 + 50 / 60)
    assert queue["after"]["nightHours"] == pytest.approx(10 + 50 / 60)

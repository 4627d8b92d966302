"""A scenario's ``addJob`` files are rendered by synth before any component starts: a missing or
bad job file is exit 2 naming it, and a good one gives exactly its TFJob and checkpoint claim, as
synth writes them into dist/ once the file is merged. No test here runs a simulation."""
from __future__ import annotations

from colocate import ROOT, app
from colocate.base import safe_yaml
from colocate.simulate import scenario
from tests.helpers import colocate

DIST = ROOT / "dist"


def _scenario(folder, add: str) -> str:
    path = folder / "added.yaml"
    path.write_text(f"name: added\nsteps:\n  - {{name: merge, addJob: {add}}}\n")
    return str(path)


def test_a_missing_job_file_is_refused_before_the_simulation_starts(tmp_path):
    proc = colocate("simulate", str(DIST), "--scenario", _scenario(tmp_path, "jobs/none.yaml"))
    assert proc.returncode == 2, proc.stderr
    assert "addJob" in proc.stderr and "'jobs/none.yaml': no such job file" in proc.stderr, proc.stderr
    assert "control plane" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_a_job_file_outside_the_scenario_folder_is_refused(tmp_path):
    (tmp_path / "outside.yaml").write_text((ROOT / "jobs" / "tf-ps-mode.yaml").read_text())
    (tmp_path / "s").mkdir()
    proc = colocate("simulate", str(DIST), "--scenario", _scenario(tmp_path / "s", "../outside.yaml"))
    assert proc.returncode == 2 and "no such job file" in proc.stderr, proc.stderr


def test_a_bad_job_file_is_refused_naming_the_file_and_key(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "bad-job.yaml").write_text("name: bad-job\nimage: harbor.example.com/ml/x:1\nroles: {}\n")
    proc = colocate("simulate", str(DIST), "--scenario", _scenario(tmp_path, "jobs/bad-job.yaml"))
    assert proc.returncode == 2, proc.stderr
    assert "bad-job.yaml" in proc.stderr and "roles" in proc.stderr, proc.stderr
    assert "control plane" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_the_added_job_is_what_synth_writes_for_it():
    shipped = scenario.load("queue")
    paths = [shipped.job_file("queue-jobs/late-eval.yaml")]
    ((name, files),) = app.job_files(None, paths)
    assert name == "late-eval"
    kinds = sorted((d["kind"], d["metadata"]["name"]) for text in files.values() for d in safe_yaml.load_all(text) if d)
    assert kinds == [("PersistentVolumeClaim", "late-eval-checkpoints"), ("TFJob", "late-eval")], kinds
    # The same text synth writes for a job of that shape in dist/ (tf-mnist-dist), name aside.
    tfjob = next(t for p, t in files.items() if p.startswith("apps/training/tfjob."))
    reference = (DIST / "apps" / "training" / "tfjob.training.tf-mnist-dist.yaml").read_text()
    assert tfjob.splitlines()[:12] == reference.replace("tf-mnist-dist", "late-eval").splitlines()[:12]

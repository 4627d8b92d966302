"""No job file, with the real Argo CD (v2.10.15) in the simulation: dist/
synthesized from an empty jobs folder keeps the colocate-training Application's folder, so the
Application syncs; the layout synth wrote before (the folder gone, the Application still
pointing at it) is what Argo CD refuses with "app path does not exist"."""
from __future__ import annotations

import shutil

import pytest

from tests.helpers import colocate
from tests.simulate.test_simulate import simulate, survivors

APP = "colocate-training"


@pytest.fixture(scope="module")
def no_jobs(tmp_path_factory):
    root = tmp_path_factory.mktemp("no-jobs")
    (root / "jobs").mkdir()
    proc = colocate("synth", "--jobs", str(root / "jobs"), "--outdir", str(root / "dist"))
    assert proc.returncode == 0, proc.stderr
    return root / "dist"


def _application(report: dict, name: str) -> dict:
    return next(a for a in report["applications"] if a["name"] == name)


def test_the_training_application_syncs_with_no_job(no_jobs):
    _, report = simulate(str(no_jobs))
    app = _application(report, APP)
    assert app["sync"] == "Synced" and app["failed"] == [], app
    assert "app path does not exist" not in app["message"], app
    assert report["tfjobs"] == {}, report["tfjobs"]
    assert survivors() == []


def test_without_the_folder_argo_cd_stops_at_a_missing_path(no_jobs, tmp_path):
    # What synth wrote before the fix: apps/training gone, the Application unchanged.
    broken = tmp_path / "dist"
    shutil.copytree(no_jobs, broken)
    shutil.rmtree(broken / "apps" / "training")
    _, report = simulate(str(broken))
    app = _application(report, APP)
    assert "app path does not exist" in app["message"], app
    assert survivors() == []

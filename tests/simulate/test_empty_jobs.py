"""No job file, with the real Argo CD (v2.10.15) in the simulation: dist/
synthesized from an empty jobs folder keeps the colocate-training Application's folder, so the
Application syncs; the layout synth wrote before (the folder gone, the Application still
pointing at it) is what Argo CD refuses with "app path does not exist". One cluster shows both:
the second is a later commit of the same repository that removes the folder."""
from __future__ import annotations

import shutil

import pytest

from colocate import config
from colocate.simulate import argocd, run, scenario, toolchain
from tests.helpers import colocate
from tests.simulate.test_simulate import survivors, tagged

APP = "colocate-training"
MISSING = "app path does not exist"


@pytest.fixture(scope="module")
def no_jobs(tmp_path_factory):
    toolchain.ensure(log=lambda line: None)
    root = tmp_path_factory.mktemp("no-jobs")
    (root / "jobs").mkdir()
    proc = colocate("synth", "--jobs", str(root / "jobs"), "--outdir", str(root / "dist"))
    assert proc.returncode == 0, proc.stderr
    dist = root / "dist"
    seen = {}

    def inspect(cp):
        # What synth wrote before the fix: apps/training gone, the Application unchanged.
        argo = argocd.ArgoCD(cp, config.load(), dist)
        shutil.rmtree(argo.repo / "dist" / "apps" / "training")
        argo.commit("apps/training removed")
        argo.refresh(APP)

        def refused() -> bool:
            seen["after"] = next(a for a in argo.apps() if a.name == APP)
            return MISSING in seen["after"].message

        argocd._wait(argo, refused, f"Application {APP} to report the missing folder", timeout=60)

    with tagged():
        obs, _ = run.simulate(dist, scenario.load("night"), log=lambda line: None, inspect=inspect)
    return obs, seen


def test_the_training_application_syncs_with_no_job(no_jobs):
    obs, _ = no_jobs
    app = next(a for a in obs.applications if a.name == APP)
    assert app.sync == "Synced" and app.failed == (), app
    assert MISSING not in app.message, app
    assert obs.tfjobs == {}, obs.tfjobs


def test_without_the_folder_argo_cd_stops_at_a_missing_path(no_jobs):
    _, seen = no_jobs
    assert MISSING in seen["after"].message, seen["after"]
    assert survivors() == []

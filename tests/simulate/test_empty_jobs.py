"""No job file, with the real Argo CD (v2.10.15) in the simulation: dist/
synthesized from an empty jobs folder keeps the colocate-training Application's folder, so the
Application syncs; the layout synth wrote before (the folder gone, the Application still
pointing at it) is what Argo CD refuses with "app path does not exist". One cluster shows both:
the second is a later commit of the same repository that removes the folder."""
from __future__ import annotations

import shutil
import time

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
        path = cp.path("argoproj.io/v1alpha1", "Application", argo.namespace, APP)
        cp.request("PATCH", path, {"metadata": {"annotations": {"argocd.argoproj.io/refresh": "hard"}}},
                   content_type="application/merge-patch+json")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen["after"] = next(a for a in argo.apps() if a.name == APP)
            if MISSING in seen["after"].message:
                break
            time.sleep(0.5)

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

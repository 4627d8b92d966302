"""A scenario's ``finishJob`` names one job, or several of which the first that runs finishes:
Kueue orders jobs created in the same second either way, so which of them runs after a spike is
not fixed (docs/simulate.md). No test here runs a simulation."""
from __future__ import annotations

from colocate import ROOT
from colocate.config import load as load_config
from colocate.simulate import scenario, steps
from colocate.simulate.run import _dist_documents
from tests.helpers import colocate

DIST = ROOT / "dist"


def _scenario(folder, finish: str) -> str:
    path = folder / "finish.yaml"
    path.write_text(f"name: finish\nsteps:\n  - {{name: done, finishJob: {finish}}}\n")
    return str(path)


def test_each_form_plans_its_candidates_in_order(tmp_path):
    docs = _dist_documents(DIST)
    one = steps.plan(scenario.load(_scenario(tmp_path, "tf-ps-mode")), docs, None)
    assert [s.finish_jobs for s in one] == [(("tf-ps-mode",),)]
    several = steps.plan(scenario.load(_scenario(tmp_path, "[recsys-train, tf-ps-mode]")), docs, None)
    assert [s.finish_jobs for s in several] == [(("recsys-train", "tf-ps-mode"),)]
    day = steps.plan(scenario.load("queue"), docs, load_config().schedule)
    assert day[23].finish_jobs == (("resnet-train", "ctr-train", "asr-train"),), day[23]


def test_an_empty_or_bad_list_is_refused_before_the_simulation_starts(tmp_path):
    for finish in ("[]", "[Bad_Name]", "[a, a]"):
        proc = colocate("simulate", str(DIST), "--scenario", _scenario(tmp_path, finish))
        assert proc.returncode == 2, (finish, proc.stderr)
        assert "finishJob" in proc.stderr and "is not a job name or a list of them" in proc.stderr, (finish, proc.stderr)
        assert "control plane" not in proc.stderr and "Traceback" not in proc.stderr, (finish, proc.stderr)

"""``colocate simulate`` keeps the settled base in the user's cache folder and restores it on the
next run with the same base (docs/simulate.md, "A kept base"): the restored run reports what a run
from nothing reports, in a fraction of the time."""
from __future__ import annotations

import json

from colocate import ROOT
from tests.helpers import colocate
from tests.simulate.test_simulate import TAG


def _night(*args: str) -> tuple[dict, str]:
    proc = colocate("simulate", str(ROOT / "dist"), "--format", "json", *args, env=TAG)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout), proc.stderr


def _what_the_cluster_did(report: dict) -> dict:
    return {k: report[k] for k in ("pods", "nodes", "tfjobs", "applications", "rejected", "admission_policies",
                                   "stand_ins", "preemptions", "steps", "settled", "ok")}


def test_a_restored_base_reports_what_a_base_synced_from_nothing_reports(own_cache):
    fresh, said = _night()
    assert "base kept as" in said and "on the kept base" not in said, said[-2000:]
    restored, said = _night()
    assert "on the kept base" in said and "base kept as" not in said, said[-2000:]
    assert _what_the_cluster_did(restored) == _what_the_cluster_did(fresh)
    # Argo CD found every Application as the first run left it: nothing synced again.
    assert all(a["sync"] == "Synced" for a in restored["applications"]), restored["applications"]


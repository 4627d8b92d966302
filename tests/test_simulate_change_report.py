"""How the change simulation reads an Application's sync operation (simulate/argocd.py
app_change) and says it (simulate/formats.py), from Application status as argo-cd v2.10.15
writes it (pkg/apis/application/v1alpha1/types.go SyncOperationResult, ResourceResult).
tests/simulate/test_change.py runs the real components."""
from __future__ import annotations

from colocate.simulate import formats
from colocate.simulate.argocd import app_change
from colocate.simulate.observe import Observation

HEAD = "0123456789abcdef0123456789abcdef01234567"


def _app(phase: str, resources: list[dict], revision: str = HEAD, message: str = "") -> dict:
    return {"metadata": {"name": "colocate-monitoring"},
            "status": {"operationState": {"phase": phase, "message": message,
                                          "syncResult": {"revision": revision, "resources": resources}}}}


def _result(kind: str, name: str, **fields) -> dict:
    return {"group": "", "version": "v1", "kind": kind, "namespace": "monitoring", "name": name, **fields}


def test_a_sync_that_reruns_hooks_says_which_and_in_what_phase():
    app = _app("Succeeded", [
        _result("ConfigMap", "rules", status="Synced", message="configmap/rules configured", syncPhase="Sync"),
        # A hook's status is always empty; its message is what kubectl said when it created it.
        _result("Job", "admission-patch", message="job.batch/admission-patch created", hookType="PostSync",
                hookPhase="Succeeded", syncPhase="PostSync"),
        _result("Job", "admission-create", hookType="PreSync", hookPhase="Running", syncPhase="PreSync"),
    ])
    change = app_change(app, HEAD, {})
    assert change.ok and change.changed == ("ConfigMap/monitoring/rules",) and not change.created, change
    assert change.hooks == ("Job/monitoring/admission-patch (PostSync: Succeeded)",
                            "Job/monitoring/admission-create (PreSync: Running)"), change
    (line,) = [x for x in formats._change_lines(Observation("night", change=[change])) if x.startswith("colocate-")]
    assert "ran the hooks Job/monitoring/admission-patch (PostSync: Succeeded)" in line, line


def test_a_failed_hook_fails_the_change_naming_its_file():
    app = _app("Failed", [_result("Job", "admission-patch", message="Job has reached the specified backoff limit",
                                  hookType="PostSync", hookPhase="Failed", syncPhase="PostSync")],
               message="one or more synchronization tasks completed unsuccessfully")
    files = {"Job/monitoring/admission-patch": "apps/kube-prometheus-stack/job.monitoring.admission-patch.yaml"}
    change = app_change(app, HEAD, files)
    assert not change.ok and not change.hooks, change
    assert change.failed == (("Job/monitoring/admission-patch (dist/apps/kube-prometheus-stack/"
                              "job.monitoring.admission-patch.yaml)", "Job has reached the specified backoff limit"),)


def test_an_application_whose_last_sync_is_of_the_base_did_not_sync():
    change = app_change(_app("Succeeded", [_result("ConfigMap", "rules", status="Synced")], revision="f" * 40), HEAD, {})
    assert change.phase == "" and change.ok and not change.changed, change

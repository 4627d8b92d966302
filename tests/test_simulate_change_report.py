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


def test_an_object_the_change_removed_and_argo_cd_kept_says_why():
    # gitops-engine pkg/sync/sync_context.go pruneObject: Prune=false is "ignored (no prune)".
    app = _app("Succeeded", [
        _result("PersistentVolumeClaim", "job-checkpoints", status="PruneSkipped", message="ignored (no prune)"),
        _result("ConfigMap", "old", status="Pruned", message="pruned")])
    change = app_change(app, HEAD, {})
    assert change.kept == ("PersistentVolumeClaim/monitoring/job-checkpoints (ignored (no prune))",), change
    assert change.pruned == ("ConfigMap/monitoring/old",) and change.ok, change
    (line,) = [x for x in formats._change_lines(Observation("night", change=[change])) if x.startswith("colocate-")]
    assert "pruned ConfigMap/monitoring/old; kept what it removed PersistentVolumeClaim/monitoring/job-checkpoints" in line


def test_a_server_side_apply_is_created_or_applied_by_what_was_live_before():
    # kubectl v0.26.11 pkg/cmd/apply/apply.go: "serverside-applied" for a new object and a live one alike.
    app = _app("Succeeded", [
        _result("ConfigMap", "new", status="Synced", message="configmap/new serverside-applied"),
        _result("ConfigMap", "live", status="Synced", message="configmap/live serverside-applied")])
    change = app_change(app, HEAD, {}, held={"ConfigMap/monitoring/live"})
    assert change.created == ("ConfigMap/monitoring/new",) and change.applied == ("ConfigMap/monitoring/live",), change
    assert change.changed == (), change


def test_a_cluster_scoped_object_is_known_by_kind_and_name():
    # Argo CD gives a cluster-scoped object's result the Application's destination namespace;
    # the report names it as dist/ and the cluster do.
    app = _app("Succeeded", [_result("CustomResourceDefinition", "alertmanagers.monitoring.coreos.com", status="Synced",
                                     message="customresourcedefinition.apiextensions.k8s.io/alertmanagers."
                                             "monitoring.coreos.com serverside-applied")])
    change = app_change(app, HEAD, {}, held={"CustomResourceDefinition/alertmanagers.monitoring.coreos.com"})
    assert change.applied == ("CustomResourceDefinition/alertmanagers.monitoring.coreos.com",), change
    assert change.created == (), change

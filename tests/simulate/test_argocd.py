"""Argo CD in the simulation (its real application controller and repo server, v2.10.15): the
root Application syncs every Application from dist/, the platform ones' rendered charts too, and deleting
colocate-platform as if its file were removed lists what it deletes: the training Namespace and
every claim in it when the Namespace lacks the Delete=false that the reference gives it, one
NetworkPolicy that lacks it, and none of the PriorityClasses, quotas, LimitRanges and other
NetworkPolicies, which keep it; deleting colocate-training first, in the same cluster, lists the one
claim that lacks Delete=false and none of those that have it (docs/gitops.md, "Deletion protection")."""
from __future__ import annotations

import shutil

import pytest
import yaml

from colocate import ROOT
from tests.simulate.test_simulate import simulate, survivors
from tests.helpers import yaml_load, yaml_load_all

DIST = ROOT / "dist"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
#: The Applications of the vendored charts and the operator overlay, rendered into dist/ by synth.
PLATFORM = {"kube-prometheus-stack", "dcgm-exporter", "nvidia-device-plugin", "colocate-training-operator-upstream"}
CLAIMS = ("recsys-train-checkpoints", "tf-mnist-dist-checkpoints", "tf-ps-mode-checkpoints")
#: The one guard whose Delete=false the drill's copy takes off.
UNGUARDED = "networkpolicy.online.default-deny"
#: The one claim whose Delete=false the drill's copy takes off.
UNGUARDED_CLAIM = "persistentvolumeclaim.training.tf-ps-mode-checkpoints"
GUARDS = ("PriorityClass", "ResourceQuota", "LimitRange", "NetworkPolicy",
          "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


@pytest.fixture(scope="module")
def platform_drill(tmp_path_factory):
    """dist/ whose training Namespace, online default-deny NetworkPolicy and tf-ps-mode claim lost
    Delete=false (what a careless change does; everything else keeps it), with colocate-training
    drilled, then colocate-platform (each drill puts its Application back before the next)."""
    root = tmp_path_factory.mktemp("platform-drill")
    dist = root / "dist"
    shutil.copytree(DIST, dist)
    for name in ("platform/namespace.training", f"platform/{UNGUARDED}", f"training/{UNGUARDED_CLAIM}"):
        file = dist / f"apps/{name}.yaml"
        doc = yaml_load(file.read_text())
        assert "Delete=false" in doc["metadata"]["annotations"].pop(SYNC_OPTIONS)  # the reference protects it
        file.write_text(yaml.safe_dump(doc))
    scenario = root / "drill.yaml"
    scenario.write_text("deleteDrill: [colocate-training, colocate-platform]\n")
    return simulate(str(dist), "--scenario", str(scenario))[1]


def test_root_application_syncs_every_application_from_dist(platform_drill):
    apps = {a["name"]: a for a in platform_drill["applications"]}
    assert set(apps) == {"colocate-root", "colocate-platform", "colocate-training", "colocate-online",
                         "colocate-monitoring", "colocate-observability", "colocate-training-operator",
                         "colocate-training-control", "colocate-kueue", "colocate-kueue-upstream"} | PLATFORM
    for app in apps.values():
        assert not app["offline"], app  # every source is a folder of dist/ in this repository
        assert app["sync"] == "Synced" and app["failed"] == [], app
        # Progressing: TFJobs and the prepull DaemonSet whose pods are still starting at the end of the sync
        assert app["health"] in ("Healthy", "Progressing"), app
    for name in PLATFORM:  # the charts' hooks ran, their CRDs and the operator stand-in's status made them healthy
        assert apps[name]["health"] == "Healthy", apps[name]
    assert platform_drill["rejected"] == [], platform_drill["rejected"]


def test_delete_drill_lists_the_namespaces_and_claims_deleting_colocate_platform_deletes(platform_drill):
    gone = platform_drill["drills"]["colocate-platform"]
    assert "Namespace/training" in gone, gone
    # A Namespace takes every claim in it along, even one whose own Delete=false Argo CD honours.
    for claim in CLAIMS:
        assert f"PersistentVolumeClaim/training/{claim}" in gone, gone
    assert "TFJob/training/tf-ps-mode" in gone  # colocate-training's, gone with its Namespace
    # Delete=false kept these namespaces, and so everything in them.
    assert not {"Namespace/online", "Namespace/monitoring", "Namespace/kubeflow"} & set(gone), gone
    assert "Deployment/online/recsys-inference" not in gone, gone


def test_delete_drill_keeps_priority_classes_quotas_limit_ranges_and_network_policies(platform_drill):
    """Guards carry Delete=false: deleting colocate-platform leaves every PriorityClass (else each new
    pod naming one is refused), quota, LimitRange and NetworkPolicy of a namespace that stays, and
    every admission policy and binding (else admission is off)."""
    gone = platform_drill["drills"]["colocate-platform"]
    # The one whose Delete=false was taken off goes: the drill sees a guard's deletion.
    assert "NetworkPolicy/online/default-deny" in gone, gone
    kept = []
    for file in sorted((DIST / "apps").rglob("*.yaml")):
        for doc in yaml_load_all(file.read_text()):
            if doc and doc["kind"] in GUARDS and doc["metadata"].get("namespace") != "training":
                kept.append("/".join(x for x in (doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]) if x))
    assert {k.split("/")[0] for k in kept} == set(GUARDS), kept
    assert "PriorityClass/offline-batch" in kept and "ResourceQuota/online/online-quota" in kept
    assert [k for k in kept if k in gone] == ["NetworkPolicy/online/default-deny"], gone
    stateful = [o.split("/")[0] in ("Namespace", "PersistentVolumeClaim", "PersistentVolume") for o in gone]
    assert stateful == sorted(stateful, reverse=True), f"stateful objects first: {gone}"
    assert platform_drill["settled"] and survivors() == []


def test_delete_drill_lists_the_claim_a_deletion_would_take(platform_drill):
    """The real Argo CD controller deletes what an Application manages when its file goes; our
    claims carry Delete=false, so the drill keeps them. The one without it is listed, stateful
    objects first."""
    gone = platform_drill["drills"]["colocate-training"]
    assert gone[0] == "PersistentVolumeClaim/training/tf-ps-mode-checkpoints", gone
    kept = {"PersistentVolumeClaim/training/recsys-train-checkpoints", "PersistentVolumeClaim/training/tf-mnist-dist-checkpoints"}
    assert not kept & set(gone) and "TFJob/training/tf-ps-mode" in gone, gone

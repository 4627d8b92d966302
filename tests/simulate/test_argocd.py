"""Argo CD in the simulation (its real application controller and repo server, v2.10.15): the
root Application syncs every colocate Application that renders offline, and deleting
colocate-platform as if its file were removed lists the Namespaces it deletes and every claim in
them, when the Namespaces lack the Delete=false that the reference gives them."""
from __future__ import annotations

import shutil

import pytest
import yaml

from colocate import ROOT
from tests.simulate.test_simulate import simulate, survivors

DIST = ROOT / "dist"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
#: Sources Argo CD cannot fetch offline: Helm repositories and the upstream training-operator git.
OFFLINE = {"kube-prometheus-stack", "dcgm-exporter", "nvidia-device-plugin", "colocate-training-operator-upstream"}
CLAIMS = ("recsys-train-checkpoints", "tf-mnist-dist-checkpoints", "tf-ps-mode-checkpoints")


@pytest.fixture(scope="module")
def platform_drill(tmp_path_factory):
    """dist/ whose online and training Namespaces lost Delete=false (what a careless change does;
    monitoring and kubeflow keep it), with colocate-platform drilled."""
    root = tmp_path_factory.mktemp("platform-drill")
    dist = root / "dist"
    shutil.copytree(DIST, dist)
    for namespace in ("online", "training"):
        file = dist / f"apps/platform/namespace.{namespace}.yaml"
        doc = yaml.safe_load(file.read_text())
        assert "Delete=false" in doc["metadata"]["annotations"].pop(SYNC_OPTIONS)  # the reference protects it
        file.write_text(yaml.safe_dump(doc))
    scenario = root / "drill.yaml"
    scenario.write_text("deleteDrill: [colocate-platform]\n")
    return simulate(str(dist), "--scenario", str(scenario))[1]


def test_root_application_syncs_every_colocate_application_that_renders_offline(platform_drill):
    apps = {a["name"]: a for a in platform_drill["applications"]}
    ours = {name for name, a in apps.items() if not a["offline"]}
    assert ours == {"colocate-root", "colocate-platform", "colocate-training", "colocate-online", "colocate-monitoring",
                    "colocate-observability", "colocate-training-operator", "colocate-training-control"}
    for name in ours:
        assert apps[name]["sync"] == "Synced" and apps[name]["failed"] == [], apps[name]
        # Progressing: TFJobs and the prepull DaemonSet whose pods are still starting at the end of the sync
        assert apps[name]["health"] in ("Healthy", "Progressing"), apps[name]
    assert {name for name, a in apps.items() if a["offline"]} == OFFLINE
    for name in OFFLINE:  # Argo CD's own condition says why
        assert "ComparisonError" in apps[name]["message"], apps[name]
    assert platform_drill["rejected"] == [], platform_drill["rejected"]


def test_delete_drill_lists_the_namespaces_and_claims_deleting_colocate_platform_deletes(platform_drill):
    gone = platform_drill["drills"]["colocate-platform"]
    for namespace in ("online", "training"):
        assert f"Namespace/{namespace}" in gone, gone
    # A Namespace takes every claim in it along, even one whose own Delete=false Argo CD honours.
    for claim in CLAIMS:
        assert f"PersistentVolumeClaim/training/{claim}" in gone, gone
    assert "Deployment/online/recsys-inference" in gone  # colocate-online's, gone with its Namespace
    assert not {"Namespace/monitoring", "Namespace/kubeflow"} & set(gone), gone  # Delete=false kept them
    stateful = [o.split("/")[0] in ("Namespace", "PersistentVolumeClaim", "PersistentVolume") for o in gone]
    assert stateful == sorted(stateful, reverse=True), f"stateful objects first: {gone}"
    assert platform_drill["settled"] and survivors() == []

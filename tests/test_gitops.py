"""What Argo CD may delete in the generated cluster: nothing that holds data."""
from __future__ import annotations

import pytest

from colocate import ROOT
from colocate.model.names import COMPARE_OPTIONS, sync_options
from tests.helpers import yaml_load_all

DIST = ROOT / "dist"
STATEFUL = ("Namespace", "PersistentVolumeClaim", "CustomResourceDefinition")


def _objects():
    for path in sorted(DIST.glob("apps/**/*.yaml")):
        for obj in yaml_load_all(path.read_text()):
            if obj and obj.get("kind") in STATEFUL:
                yield path.relative_to(ROOT), obj


def test_dist_has_stateful_objects_to_protect():
    kinds = {obj["kind"] for _, obj in _objects()}
    assert {"Namespace", "PersistentVolumeClaim"} <= kinds


@pytest.mark.parametrize("path, obj", list(_objects()), ids=lambda v: str(v) if not isinstance(v, dict) else "")
def test_every_stateful_object_survives_prune_and_cascade_deletion(path, obj):
    assert {"Prune=false", "Delete=false"} <= sync_options(obj["metadata"]), path
    # Kept on prune, so it must not hold the Application OutOfSync once its file is gone.
    assert "IgnoreExtraneous" in sync_options(obj["metadata"], COMPARE_OPTIONS), path


GUARDS = ("PriorityClass", "ResourceQuota", "LimitRange", "NetworkPolicy")


def test_every_guard_survives_the_deletion_of_its_application_and_is_pruned_with_its_file():
    """PriorityClasses, quotas, LimitRanges and NetworkPolicies: Delete=false, and no Prune=false
    (removing the file in a reviewed change removes the object; docs/gitops.md)."""
    found = []
    for path in sorted(DIST.glob("apps/**/*.yaml")):
        for obj in yaml_load_all(path.read_text()):
            if obj and obj.get("kind") in GUARDS:
                found.append(obj["kind"])
                assert sync_options(obj["metadata"]) == {"Delete=false"}, path
    assert set(found) == set(GUARDS), found


@pytest.mark.parametrize("value, options", [
    ("Prune=false", {"Prune=false"}),
    ("Prune=false,Delete=false", {"Prune=false", "Delete=false"}),
    (" Delete=false , ServerSideApply=true,,", {"Delete=false", "ServerSideApply=true"}),
    (None, set()),
])
def test_sync_options_are_read_as_gitops_engine_reads_them(value, options):
    metadata = {"annotations": {"argocd.argoproj.io/sync-options": value}} if value is not None else {}
    assert sync_options(metadata) == options


def test_the_generated_applications_need_no_field_newer_than_argo_cd_2_7(tmp_path):
    """The charts and the operator overlay are rendered at synth time, so no Application uses
    helm.valuesObject (2.8) or kustomize.patches (2.9) any more: with minArgoCDVersion 2.7, COL301
    finds nothing (its fixtures prove it finds those fields in hand-written Applications)."""
    from colocate import checker

    config = tmp_path / "colocate.yaml"
    config.write_text((ROOT / "colocate.yaml").read_text().replace('minArgoCDVersion: "2.9"', 'minArgoCDVersion: "2.7"'))
    assert 'minArgoCDVersion: "2.7"' in config.read_text()
    findings = [f for f in checker.check([DIST / "apps" / "argocd"], config).findings if f.rule == "COL301"]
    assert findings == []
    assert not [f for f in checker.check([DIST / "apps" / "argocd"]).findings if f.rule == "COL301"]

from __future__ import annotations

import cdk8s
import pytest

from colocate.constructs.namespace import Namespace, NamespaceProps
from colocate.errors import PropError


def _synth(props: NamespaceProps) -> dict:
    chart = cdk8s.Testing.chart()
    Namespace(chart, "ns", props)
    [obj] = cdk8s.Testing.synth(chart)
    return obj


def test_a_namespace_enforces_its_level_and_is_kept_when_argo_cd_prunes_or_deletes():
    obj = _synth(NamespaceProps(name="kubeflow", enforce="baseline"))
    assert obj["metadata"]["labels"] == {"pod-security.kubernetes.io/enforce": "baseline"}
    assert obj["metadata"]["annotations"] == {"argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
                                              "argocd.argoproj.io/compare-options": "IgnoreExtraneous"}


def test_warn_and_audit_levels_and_extra_labels_are_added():
    obj = _synth(NamespaceProps(name="training", enforce="baseline", warn_and_audit="restricted",
                                labels={"colocate.io/tier": "offline"}, protected=False))
    assert obj["metadata"]["labels"] == {
        "colocate.io/tier": "offline", "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted"}
    assert "annotations" not in obj["metadata"]


def test_an_unknown_pod_security_level_names_the_prop():
    with pytest.raises(PropError, match=r"Namespace 'x'.*prop 'enforce': 'strict' must be one of privileged, baseline, restricted"):
        _synth(NamespaceProps(name="x", enforce="strict"))

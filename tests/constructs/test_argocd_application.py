from __future__ import annotations

import pytest
import cdk8s

from colocate.constructs.argocd_application import ApplicationProps, ArgoApplication, git_directory
from colocate.errors import PropError


def props(**overrides) -> ApplicationProps:
    base = dict(name="colocate-platform", namespace="argocd", project="default",
                source=git_directory("https://git.example.com/x.git", "main", "dist/apps/platform"),
                destination_server="https://kubernetes.default.svc", sync_wave=-10, sync_options=("PruneLast=true",))
    return ApplicationProps(**{**base, **overrides})


def test_application_syncs_automatically_with_prune_self_heal_and_retry():
    chart = cdk8s.Testing.chart()
    ArgoApplication(chart, "a", props())
    app = cdk8s.Testing.synth(chart)[0]
    assert app["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-10"
    assert app["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    assert app["spec"]["syncPolicy"]["retry"]["limit"] > 0
    assert app["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]


@pytest.mark.parametrize("overrides, prop", [
    ({"sync_options": ("ServerSideApply=yes",)}, "sync_options[0]"),
    ({"sync_options": ("Replace=true", "ServerSideApply=true")}, "sync_options"),
    ({"source": None}, "source/sources"),
    ({"name": "Platform"}, "name"),
])
def test_bad_props_are_refused_naming_the_prop(overrides, prop):
    with pytest.raises(PropError) as err:
        ArgoApplication(cdk8s.Testing.chart(), "a", props(**overrides))
    assert err.value.prop == prop

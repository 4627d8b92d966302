"""The shared placement and image helpers behave as the API server and the runtime do."""
from __future__ import annotations

import pytest

from colocate.model.names import POOL_LABEL, POOL_SELECTOR_LABEL
from colocate.model.scheduling import ImageRef, pod_pools, pool_term, required_pool_affinity, selector_matches


@pytest.mark.parametrize("image, registry, repository, tag, digest, pinned, mirror_path", [
    ("harbor.example.com/ml/tf-mnist:2.11.0", "harbor.example.com", "ml/tf-mnist", "2.11.0", "", True, True),
    ("harbor.example.com:5000/ml/tf:2.11", "harbor.example.com:5000", "ml/tf", "2.11", "", True, True),
    ("harbor.example.com:5000/ml/tf", "harbor.example.com:5000", "ml/tf", "", "", False, True),
    ("ml/tf:latest", "", "ml/tf", "latest", "", False, True),
    ("busybox", "", "busybox", "", "", False, False),
    ("busybox:1.36", "", "busybox", "1.36", "", True, False),
    ("registry.k8s.io/pause@sha256:abc", "registry.k8s.io", "pause", "", "sha256:abc", True, True),
    ("localhost/x:1", "localhost", "x", "1", "", True, True),
])
def test_image_references_split_like_the_runtime(image, registry, repository, tag, digest, pinned, mirror_path):
    ref = ImageRef.parse(image)
    assert (ref.registry, ref.repository, ref.tag, ref.digest) == (registry, repository, tag, digest)
    assert ref.pinned is pinned
    assert ref.has_registry_path is mirror_path


def test_pool_term_lists_the_pools_sorted_under_the_label_kubelets_cannot_set():
    assert POOL_SELECTOR_LABEL.startswith("node-restriction.kubernetes.io/")
    assert pool_term(["mixed", "online"]) == {"matchExpressions": [
        {"key": POOL_SELECTOR_LABEL, "operator": "In", "values": ["mixed", "online"]}]}
    assert required_pool_affinity(["online", "mixed"])["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [pool_term(["mixed", "online"])]}


def test_a_pod_names_its_pools_by_either_pool_label():
    assert pod_pools({"nodeSelector": {POOL_LABEL: "online"}}) == {"online"}
    assert pod_pools({"affinity": required_pool_affinity(["mixed", "online"])}) == {"mixed", "online"}


@pytest.mark.parametrize("selector, matches", [
    ({}, True),
    (None, False),
    ({"matchLabels": {"app": "a"}}, True),
    ({"matchLabels": {"app": "b"}}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}, True),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, False),
    ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, False),
])
def test_label_selectors_match_as_the_api_server_evaluates_them(selector, matches):
    assert selector_matches(selector, {"app": "a"}) is matches


@pytest.mark.parametrize("selector", [
    [], ["app"], {"matchLabels": []}, {"matchLabels": ["app"]}, {"matchExpressions": {"key": "app"}},
    {"matchExpressions": [["app"]]}, {"matchExpressions": [{"key": ["app"], "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": ["In"], "values": ["a"]}]},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": 5}]},
])
def test_a_selector_of_the_wrong_shape_matches_nothing_and_raises_nothing(selector):
    """What the API server refuses (kubeconform says so) must not crash the rules that join on it."""
    assert selector_matches(selector, {"app": "a"}) is False
    assert selector_matches({}, ["app"]) is True  # labels of the wrong shape are none

"""The one container iterator (colocate.model.pods.containers) that every check walks pods with."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from colocate.model import pods


@dataclass
class _Pod:
    spec: dict[str, Any]
    path: str = "spec.template.spec"
    replica_key: str = ""
    doc: Any = field(default=None)


def test_running_containers_are_init_then_regular_and_all_adds_ephemeral():
    pod = _Pod({"initContainers": [{"name": "i"}], "containers": [{"name": "a"}, {"name": "b"}],
                "ephemeralContainers": [{"name": "debug"}]})
    assert [(path, c["name"]) for path, c in pods.containers(pod)] == [
        ("spec.template.spec.initContainers[0]", "i"), ("spec.template.spec.containers[0]", "a"),
        ("spec.template.spec.containers[1]", "b")]
    assert [c["name"] for _, c in pods.containers(pod, pods.ALL)] == ["i", "a", "b", "debug"]


def test_lists_and_containers_of_the_wrong_shape_are_skipped_with_their_indexes_kept():
    pod = _Pod({"initContainers": 3, "containers": ["x", {"name": "a"}], "ephemeralContainers": {"name": "e"}})
    assert list(pods.containers(pod, pods.ALL)) == [("spec.template.spec.containers[1]", {"name": "a"})]

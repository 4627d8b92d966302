"""dist/'s layout, owned here: the index file, the file an object is written to, and where each
node pool's files go. The writer (colocate/synth/write.py, charts/nodes.py) and the readers (the
NodePool messages of colocate/model/pool_facts.py, ``colocate diff``'s tree) all import it, so
what a message tells the user is the file synth writes (tests/test_dist_layout.py)."""
from __future__ import annotations

#: The index of a dist/ tree: release, Kubernetes version, every folder and file.
INDEX_FILE = "index.yaml"
INDEX_API_VERSION = "colocate.io/v1alpha1"

#: The folder of the node pools: ``nodes/<pool>/`` holds one pool's files.
NODES_FOLDER = "nodes"


def object_filename(kind: str, namespace: str, name: str) -> str:
    """``deployment.online.recsys-inference.yaml``; namespaces never contain dots, so the name is
    unambiguous. Objects without metadata are named by kind alone."""
    parts = [kind.lower(), namespace, name]
    return ".".join(p for p in parts if p) + ".yaml"


def pool_folder(pool: str) -> str:
    """``nodes/<pool>``: the JoinConfiguration, the kubelet patch and the NodePool description."""
    return f"{NODES_FOLDER}/{pool}"


def nodepool_path(pool: str) -> str:
    """``nodes/<pool>/nodepool.<pool>.yaml``: the NodePool description of one pool (cluster-scoped,
    named after the pool), relative to dist/."""
    return f"{pool_folder(pool)}/{object_filename('NodePool', '', pool)}"

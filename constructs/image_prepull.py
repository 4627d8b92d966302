"""ImagePrepull: a DaemonSet that pulls images onto every node of a pool ahead of use.

A 2-10 GB training image pulled when a job starts saturates the node's disk and network
under the online services sharing the node (docs/training.md). This DaemonSet pulls each image
once, at the lowest priority, with tiny requests: one init container per image runs
``/bin/sh -c true`` (so each image needs a shell; every TensorFlow image has one) and exits,
then a pause container holds the pod so the kubelet keeps the images (unused images are what
its image garbage collection removes first).
"""
from __future__ import annotations

import hashlib
import re

from dataclasses import dataclass
from typing import Sequence

from constructs import Construct

from colocate.constructs._k8s import emit
from colocate.model.validate import check_dns_label, check_image, check_pull_secret, pull_secrets
from colocate.model.names import NAME_LABEL
from colocate.constructs.node_pool import NodePool
from colocate.model.scheduling import ImageRef, required_pool_affinity
from colocate.errors import PropError

#: Enough for ``sh -c true`` and for pause; limits equal requests (Guaranteed, never evicted
#: for exceeding them, never bursting into CPU the online services need).
TINY = {"cpu": "10m", "memory": "16Mi"}
#: Passes the ``restricted`` Pod Security level, so the namespace can enforce it.
_SECURITY = {"allowPrivilegeEscalation": False, "runAsNonRoot": True, "runAsUser": 65534,
             "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


@dataclass(frozen=True)
class ImagePrepullProps:
    """Props of an ImagePrepull."""

    #: DaemonSet name.
    name: str
    #: Namespace.
    namespace: str
    #: Images to pull, each with a pinned tag; pulled in the given order.
    images: Sequence[str]
    #: The pool whose nodes get the images (required node affinity on ``colocate.io/pool``).
    pool: NodePool
    #: PriorityClass of the background tier.
    priority_class: str
    #: Image of the container that holds the pod, e.g. the mirrored ``registry.k8s.io/pause:3.9``.
    pause_image: str
    #: Existing Secret the kubelet pulls the images with (a private Harbor project). Default: none.
    image_pull_secret: str | None = None


def pull_container_name(image: str) -> str:
    """``pull-<repository>-<tag>`` as a DNS label; a long one keeps a hash of the image."""
    ref = ImageRef.parse(image)
    slug = re.sub(r"[^a-z0-9]+", "-", f"{ref.repository}-{ref.tag or ref.digest}".lower()).strip("-")
    name = f"pull-{slug}"
    if len(name) > 63:
        name = f"{name[:54].rstrip('-')}-{hashlib.sha256(image.encode()).hexdigest()[:8]}"
    return name


class ImagePrepull(Construct):
    """One DaemonSet: an init container per image, then pause."""

    def __init__(self, scope: Construct, id: str, props: ImagePrepullProps):
        super().__init__(scope, id)
        self.props = props
        self._validate()
        p = props
        selector = {NAME_LABEL: p.name}
        tolerations = {"tolerations": p.pool.tolerations()} if p.pool.props.taints else {}
        resources = {"requests": dict(TINY), "limits": dict(TINY)}
        # Named after the image, so adding a job's image adds one init container and renames
        # none of the others (a review sees exactly the new pull).
        init = [{"name": pull_container_name(image), "image": image, "imagePullPolicy": "IfNotPresent",
                 "command": ["/bin/sh", "-c", "true"], "resources": resources, "securityContext": _SECURITY}
                for image in p.images]
        emit(self, "daemonset", {
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": p.name, "namespace": p.namespace, "labels": dict(selector)},
            "spec": {
                "selector": {"matchLabels": selector},
                # A new image list rolls out a few nodes at a time, not all pulls at once.
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": dict(selector)},
                    "spec": {
                        "priorityClassName": p.priority_class,
                        "affinity": required_pool_affinity([p.pool.name]),
                        **tolerations,
                        "automountServiceAccountToken": False,
                        "enableServiceLinks": False,
                        "terminationGracePeriodSeconds": 0,
                        "initContainers": init,
                        "containers": [{"name": "pause", "image": p.pause_image, "imagePullPolicy": "IfNotPresent",
                                        "resources": resources, "securityContext": _SECURITY}],
                        **pull_secrets(p.image_pull_secret),
                    },
                },
            },
        })

    def _validate(self) -> None:
        p, where = self.props, f"ImagePrepull {self.props.name!r}"
        check_dns_label(where, "name", p.name)
        check_dns_label(where, "namespace", p.namespace)
        if not p.images:
            raise PropError(where, "images", "is empty: there is nothing to pull")
        if len(set(p.images)) != len(p.images):
            raise PropError(where, "images", "lists an image twice")
        for i, image in enumerate(p.images):
            check_image(where, f"images[{i}]", image, mirror_path=False)
        check_image(where, "pause_image", p.pause_image, mirror_path=False)
        check_pull_secret(where, "image_pull_secret", p.image_pull_secret)
        names = [pull_container_name(image) for image in p.images]
        for i, name in enumerate(names):
            if names.index(name) != i:
                raise PropError(where, f"images[{i}]", f"{p.images[i]!r} gives the same container name {name!r} "
                                f"as {p.images[names.index(name)]!r}")

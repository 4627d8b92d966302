"""ContainerdConfig: a node's containerd settings for the Harbor mirror, as TOML files the
provisioner copies to ``/etc/containerd/`` (docs/node-pools.md, "Registry mirror on the nodes").

- ``certs.d/<harbor>/hosts.toml``: Harbor itself, trusted through its CA file;
- ``certs.d/<upstream>/hosts.toml`` for every upstream registry the cluster's images come from:
  pulls go to Harbor's proxy-cache project for that registry first;
- ``conf.d/colocate.toml``: the CRI plugin's sandbox (pause) image from the mirror, the
  registry host directory, and runc with the systemd cgroup driver.

Formats from containerd v1.7.13: ``docs/hosts.md`` and ``remotes/docker/config/hosts.go``
(hosts.toml), ``pkg/cri/config/config.go`` (CRI keys), ``services/server/config/config.go``
(imports).
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Mapping

from constructs import Construct

from colocate.base import toml_writer
from colocate.errors import PropError
from colocate.model.pools import CONTAINERD_CERTS_DIR, CONTAINERD_DROP_IN
from colocate.model.scheduling import DEFAULT_REGISTRY, ImageRef
from colocate.model.validate import check_image

_HOST = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)*(:[0-9]+)?$")
_PROJECT = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*$")
#: Nodes pull and resolve tags; they never push.
CAPABILITIES = ("pull", "resolve")
#: Docker Hub's registry API host: containerd's default for docker.io (hosts.go, ConfigureHosts).
DOCKER_HUB_SERVER = "https://registry-1.docker.io"
CRI_PLUGIN = "io.containerd.grpc.v1.cri"


@dataclass(frozen=True)
class ContainerdConfigProps:
    """What a node's containerd needs to pull everything through Harbor."""

    #: Harbor (``harbor.example.com`` or ``host:port``).
    registry_host: str
    #: Harbor proxy-cache project per upstream registry (``quay.io`` -> ``quay``).
    proxy_projects: Mapping[str, str]
    #: Every upstream image the cluster deploys, by its upstream name; each one's registry needs
    #: a proxy-cache project.
    upstream_images: tuple[str, ...]
    #: The pod sandbox image, as the cluster pulls it (``<harbor>/k8s/pause:3.9``).
    sandbox_image: str
    #: Harbor's CA certificate on the node. Default: none (the system trust store has it).
    ca_file: str | None = None


class ContainerdConfig(Construct):
    """Validates its props; ``files`` maps paths under ``/etc/containerd/`` to their text."""

    def __init__(self, scope: Construct, id: str, props: ContainerdConfigProps):
        super().__init__(scope, id)
        self.props = props
        self._validate()
        p = props
        harbor: dict = {"server": f"https://{p.registry_host}", "capabilities": list(CAPABILITIES)}
        if p.ca_file:
            harbor["ca"] = p.ca_file
        #: Path under /etc/containerd/ -> file text.
        self.files: dict[str, str] = {self._hosts_path(p.registry_host): toml_writer.dumps(
            harbor, f"Harbor. Copy to {CONTAINERD_CERTS_DIR}/{p.registry_host}/hosts.toml.")}
        for registry in self.upstream_registries:
            self.files[self._hosts_path(registry)] = toml_writer.dumps(
                self._upstream(registry),
                f"{registry} through Harbor's proxy-cache project {p.proxy_projects[registry]!r}. "
                f"Copy to {CONTAINERD_CERTS_DIR}/{registry}/hosts.toml.")
        self.files[posixpath.relpath(CONTAINERD_DROP_IN, "/etc/containerd")] = toml_writer.dumps(
            self._drop_in(), f"CRI plugin settings. Copy to {CONTAINERD_DROP_IN}; config.toml imports it\n"
            "and this section REPLACES its own [plugins.\"io.containerd.grpc.v1.cri\"] (docs/node-pools.md).")

    @property
    def upstream_registries(self) -> tuple[str, ...]:
        """Every registry with a proxy-cache project gets a hosts.toml, used by our images or not,
        so a hand-written manifest may pull from any of them (rule COL009 relies on it)."""
        return tuple(sorted(self.props.proxy_projects))

    @staticmethod
    def _hosts_path(registry: str) -> str:
        return f"{posixpath.relpath(CONTAINERD_CERTS_DIR, '/etc/containerd')}/{registry}/hosts.toml"

    def _upstream(self, registry: str) -> dict:
        p = self.props
        mirror: dict = {"capabilities": list(CAPABILITIES),
                        # The URL path is the API root itself (/v2/<project>), so containerd asks
                        # Harbor for /v2/<project>/<repository>/...; without override_path it
                        # would append /v2 again.
                        "override_path": True}
        if p.ca_file:
            mirror["ca"] = p.ca_file
        # ``server`` is tried after the mirror: an online cluster still pulls when Harbor is down.
        server = DOCKER_HUB_SERVER if registry == DEFAULT_REGISTRY else f"https://{registry}"
        return {"server": server,
                "host": {f"https://{p.registry_host}/v2/{p.proxy_projects[registry]}": mirror}}

    def _drop_in(self) -> dict:
        return {"version": 2, "plugins": {CRI_PLUGIN: {
            "sandbox_image": self.props.sandbox_image,
            "registry": {"config_path": CONTAINERD_CERTS_DIR},
            # The import replaces the main file's whole CRI section, so the runtime settings
            # kubeadm needs come along: runc with the systemd cgroup driver, which kubeadm 1.28
            # gives the kubelet by default.
            "containerd": {"runtimes": {"runc": {"runtime_type": "io.containerd.runc.v2",
                                                 "options": {"SystemdCgroup": True}}}},
        }}}

    def _validate(self) -> None:
        p, where = self.props, "ContainerdConfig"
        if not isinstance(p.registry_host, str) or not _HOST.match(p.registry_host):
            raise PropError(where, "registry_host", f"{p.registry_host!r} is not a registry host[:port]")
        if p.ca_file is not None and (not isinstance(p.ca_file, str) or not p.ca_file.startswith("/")
                                      or posixpath.normpath(p.ca_file) != p.ca_file):
            raise PropError(where, "ca_file", f"{p.ca_file!r} must be an absolute, normalized path on the node")
        check_image(where, "sandbox_image", p.sandbox_image, mirror_path=False)
        for registry, project in sorted(p.proxy_projects.items()):
            if not _PROJECT.match(project):
                raise PropError(where, f"proxy_projects[{registry!r}]", f"{project!r} is not a Harbor project name")
        for image in sorted(p.upstream_images):
            registry = ImageRef.parse(image).host
            if registry == p.registry_host:
                raise PropError(where, "upstream_images", f"{image!r} is already on Harbor ({p.registry_host})")
            if registry not in p.proxy_projects:
                raise PropError(where, "proxy_projects", f"no Harbor proxy-cache project for {registry} (image "
                                f"{image}); add it to registry.proxyCacheProjects in colocate.yaml")

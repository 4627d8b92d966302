"""ArgoApplication: one Argo CD Application, the unit Argo CD syncs."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from constructs import Construct

from colocate.errors import PropError
from colocate.constructs._k8s import emit
from colocate.model.names import RESOURCES_FINALIZER, SYNC_WAVE
from colocate.model.validate import check_dns_label

_KNOWN_SYNC_OPTIONS = frozenset({
    "CreateNamespace=true", "ServerSideApply=true", "PruneLast=true", "ApplyOutOfSyncOnly=true",
    "SkipDryRunOnMissingResource=true", "RespectIgnoreDifferences=true", "Replace=true", "Validate=false",
    "FailOnSharedResource=true",
})


def git_directory(repo_url: str, revision: str, path: str) -> dict[str, Any]:
    """A source that applies every manifest under ``path`` of a git repository."""
    return {"repoURL": repo_url, "targetRevision": revision, "path": path, "directory": {"recurse": True}}


def helm_chart(repo_url: str, chart: str, version: str, release_name: str,
               values: Mapping[str, Any]) -> dict[str, Any]:
    """A source that renders ``chart`` at ``version`` from a Helm repository, with values as
    a map (``valuesObject``, Argo CD >= 2.8) so they are reviewed as YAML, not a string.

    Name the Application like ``release_name``: before Argo CD 3.0 the tracking label
    ``app.kubernetes.io/instance=<Application>`` overwrites the chart's own instance label,
    and selectors that use it (ServiceMonitor -> Service) break unless both are equal.
    """
    return {"repoURL": repo_url, "chart": chart, "targetRevision": version,
            "helm": {"releaseName": release_name, "valuesObject": dict(values)}}


@dataclass(frozen=True)
class ApplicationProps:
    """Props of an ArgoApplication."""

    #: Application name.
    name: str
    #: Namespace Argo CD runs in.
    namespace: str
    #: Argo CD project.
    project: str
    #: ``spec.source`` (see git_directory), or None when ``sources`` is set.
    source: Mapping[str, Any] | None
    #: Cluster API server the Application deploys to.
    destination_server: str
    #: Default namespace for namespaced objects without one. Default: none.
    destination_namespace: str | None = None
    #: Sync wave of the Application itself inside its parent. Default 0.
    sync_wave: int = 0
    #: ``spec.syncPolicy.syncOptions``. Default: none.
    sync_options: Sequence[str] = ()
    #: Delete objects that left git. Default True.
    prune: bool = True
    #: Revert changes made on the cluster by hand. Default True.
    self_heal: bool = True
    #: Cascade deletion of the Application to its objects. Default True.
    cascade_delete: bool = True
    #: Multiple sources (``spec.sources``), e.g. a Helm chart plus a values ref. Default: none.
    sources: Sequence[Mapping[str, Any]] = ()
    #: Extra labels. Default: none.
    labels: Mapping[str, str] = field(default_factory=dict)
    #: ``spec.ignoreDifferences``: fields another controller owns (an autoscaler's replicas), which
    #: self-heal must not revert. Pair with the RespectIgnoreDifferences=true sync option only when
    #: git sets the field too (a Deployment's replicas): that option writes back the live value
    #: read when the sync started, which another controller may have changed since.
    #: Default: none.
    ignore_differences: Sequence[Mapping[str, Any]] = ()


class ArgoApplication(Construct):
    """An argoproj.io/v1alpha1 Application with automated, retried sync."""

    def __init__(self, scope: Construct, id: str, props: ApplicationProps):
        super().__init__(scope, id)
        self.props = props
        self._validate()
        p = props
        spec: dict[str, Any] = {
            "project": p.project,
            "destination": {"server": p.destination_server},
            "syncPolicy": {
                "automated": {"prune": p.prune, "selfHeal": p.self_heal},
                # The next sync wave waits for health; a CRD or namespace from another
                # Application may not exist yet on the first pass, so retry with backoff.
                "retry": {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}},
            },
        }
        if p.destination_namespace:
            spec["destination"]["namespace"] = p.destination_namespace
        if p.ignore_differences:
            spec["ignoreDifferences"] = [dict(d) for d in p.ignore_differences]
        if p.sync_options:
            spec["syncPolicy"]["syncOptions"] = list(p.sync_options)
        if p.source is not None:
            spec["source"] = dict(p.source)
        else:
            spec["sources"] = [dict(s) for s in p.sources]
        metadata: dict[str, Any] = {"name": p.name, "namespace": p.namespace,
                                    "annotations": {SYNC_WAVE: str(p.sync_wave)}}
        if p.labels:
            metadata["labels"] = dict(p.labels)
        if p.cascade_delete:
            metadata["finalizers"] = [RESOURCES_FINALIZER]
        emit(self, "application", {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                                   "metadata": metadata, "spec": spec})

    def _validate(self) -> None:
        p, where = self.props, f"ArgoApplication {self.props.name!r}"
        check_dns_label(where, "name", p.name)
        check_dns_label(where, "namespace", p.namespace)
        if (p.source is None) == (not p.sources):
            raise PropError(where, "source/sources", "set exactly one of source and sources")
        for i, option in enumerate(p.sync_options):
            if option not in _KNOWN_SYNC_OPTIONS:
                raise PropError(where, f"sync_options[{i}]", f"{option!r} is not a sync option this project uses "
                                f"({', '.join(sorted(_KNOWN_SYNC_OPTIONS))})")
        if "Replace=true" in p.sync_options and "ServerSideApply=true" in p.sync_options:
            raise PropError(where, "sync_options", "Replace=true takes precedence over ServerSideApply=true; pick one")

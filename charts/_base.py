"""ColocateChart: a cdk8s Chart that is one folder of dist/."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from cdk8s import Chart
from constructs import Construct

from colocate.config import Config
from colocate.constructs.argocd_application import git_directory
from colocate.model.names import COMPONENT_LABEL, MANAGED_BY_LABEL, PART_OF, PART_OF_LABEL


@dataclass(frozen=True)
class AppSpec:
    """One row of the Application table: what a chart asks Argo CD to sync, and when."""

    #: Construct id in the argocd folder.
    id: str
    #: Application name.
    name: str
    #: ``spec.source``.
    source: Mapping[str, Any]
    #: Sync wave among the Applications (lower first).
    wave: int
    #: ``spec.syncPolicy.syncOptions``.
    sync_options: Sequence[str]
    #: Default namespace for namespaced objects without one. Default: none.
    destination_namespace: str | None = None
    #: Cascade deletion of the Application to its objects. Default True.
    cascade_delete: bool = True
    #: ``spec.ignoreDifferences``: fields another controller owns on the cluster. Default: none.
    ignore_differences: Sequence[Mapping[str, Any]] = ()



class ColocateChart(Chart):
    """A Chart written to ``dist/<folder>/``.

    App charts (``folder`` under ``apps/``) become one Argo CD Application each, with the
    sync wave and options given here. Every object gets the standard ``app.kubernetes.io``
    labels, except ``app.kubernetes.io/instance``, which Argo CD (before 3.0) uses to track
    what an Application owns.
    """

    #: Sync wave of this chart's Application; cluster-scoped platform objects go first.
    sync_wave: int = 0
    #: ``syncPolicy.syncOptions`` of this chart's Application.
    sync_options: Sequence[str] = ("PruneLast=true",)
    #: ``spec.ignoreDifferences`` of this chart's Application.
    ignore_differences: Sequence[Mapping[str, Any]] = ()

    def __init__(self, scope: Construct, id: str, *, folder: str, labels: bool = True):
        super().__init__(
            scope, id,
            disable_resource_name_hashes=True,
            labels={PART_OF_LABEL: PART_OF, MANAGED_BY_LABEL: PART_OF, COMPONENT_LABEL: id} if labels else None,
        )
        self.folder = folder
        #: Files other than manifests this chart writes to its folder (relative path -> text).
        self.extra_files: dict[str, str] = {}
        #: Upstream images this chart deploys, by their upstream name; the nodes' registry
        #: mirror serves their registries (constructs/containerd_config.py).
        self.upstream_images: set[str] = set()

    def mirrored(self, config: Config, upstream: str) -> str:
        """``config.image(upstream)``, remembering ``upstream`` for the nodes' registry mirror."""
        self.upstream_images.add(upstream)
        return config.image(upstream)

    def objects(self, reuse: Sequence[Path] = ()) -> list[Any]:
        """What the chart writes to its folder: cdk8s' synthesis (resolving patches and labels).
        A chart rendered from an upstream source reads or renders its own (charts/upstream.py)."""
        return self.to_json()

    def rendering(self, written: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], dict[str, Any]] | None:
        """For a chart rendered from an upstream source, the texts of its files and the record
        dist/index.yaml keeps of the rendering; None for a chart cdk8s synthesizes."""
        return None

    @property
    def is_app(self) -> bool:
        return self.folder.startswith("apps/")

    @property
    def app_name(self) -> str:
        """Name of the Application that syncs this chart's folder."""
        return f"{PART_OF}-{self.node.id}"

    def rendered(self, config: Config) -> list[Any]:
        """Upstream sources this chart installs, rendered into folders of their own
        (charts/upstream.py ``Rendered`` rows). Default: none."""
        return []

    def applications(self, config: Config) -> list[AppSpec]:
        """The Applications this chart needs: its own folder, at its wave. Charts that also
        install upstream software (a Helm chart, a kustomize overlay) add rows for it."""
        g = config.gitops
        return [AppSpec(self.node.id, self.app_name, git_directory(g.repo_url, g.target_revision, f"dist/{self.folder}"),
                        self.sync_wave, tuple(self.sync_options), ignore_differences=tuple(self.ignore_differences))]

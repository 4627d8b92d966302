"""Argo CD app-of-apps: a root Application whose folder holds one Application per table row.

Every Application is built here, by :func:`application`, from the rows the charts declare
(``ColocateChart.applications``); each row carries its own sync wave.
"""
from __future__ import annotations

from typing import Sequence

from constructs import Construct

from colocate.config import Config
from colocate.charts._base import AppSpec, ColocateChart
from colocate.constructs.argocd_application import ApplicationProps, ArgoApplication, git_directory

ROOT_APP = "colocate-root"


def application(scope: Construct, config: Config, spec: AppSpec) -> ArgoApplication:
    g = config.gitops
    return ArgoApplication(scope, spec.id, ApplicationProps(
        name=spec.name, namespace=g.argocd_namespace, project=g.project, source=spec.source,
        destination_server=g.destination_server, destination_namespace=spec.destination_namespace,
        sync_wave=spec.wave, sync_options=tuple(spec.sync_options), cascade_delete=spec.cascade_delete,
        ignore_differences=tuple(spec.ignore_differences),
    ))


class ApplicationsChart(ColocateChart):
    """``dist/apps/argocd/``: the child Applications, synced by the root Application."""

    def __init__(self, scope: Construct, config: Config, charts: Sequence[ColocateChart]):
        super().__init__(scope, "argocd", folder="apps/argocd")
        for chart in charts:
            for spec in chart.applications(config):
                application(self, config, spec)


class BootstrapChart(ColocateChart):
    """``dist/bootstrap/``: the root Application, applied once by hand (docs/dist.md)."""

    def __init__(self, scope: Construct, config: Config, applications: ApplicationsChart):
        super().__init__(scope, "bootstrap", folder="bootstrap")
        g = config.gitops
        application(self, config, AppSpec(
            "root", ROOT_APP, git_directory(g.repo_url, g.target_revision, f"dist/{applications.folder}"), wave=0,
            sync_options=(),
            # Deleting the root must not cascade into deleting the whole cluster.
            cascade_delete=False,
        ))

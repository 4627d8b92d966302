"""Argo CD app-of-apps: a root Application whose folder holds one Application per app chart."""
from __future__ import annotations

from typing import Sequence

from constructs import Construct

from colocate.config import Config
from colocate.charts._base import ColocateChart
from colocate.constructs.argocd_application import ApplicationProps, ArgoApplication, git_directory

ROOT_APP = "colocate-root"


def app_name(chart: ColocateChart) -> str:
    return f"colocate-{chart.node.id}"


class ApplicationsChart(ColocateChart):
    """``dist/apps/argocd/``: the child Applications, synced by the root Application."""

    def __init__(self, scope: Construct, config: Config, charts: Sequence[ColocateChart]):
        super().__init__(scope, "argocd", folder="apps/argocd")
        g = config.gitops
        for chart in charts:
            ArgoApplication(self, chart.node.id, ApplicationProps(
                name=app_name(chart), namespace=g.argocd_namespace, project=g.project,
                source=git_directory(g.repo_url, g.target_revision, f"dist/{chart.folder}"),
                destination_server=g.destination_server, sync_wave=chart.sync_wave,
                sync_options=tuple(chart.sync_options),
            ))


class BootstrapChart(ColocateChart):
    """``dist/bootstrap/``: the root Application, applied once by hand (README)."""

    def __init__(self, scope: Construct, config: Config, applications: ApplicationsChart):
        super().__init__(scope, "bootstrap", folder="bootstrap")
        g = config.gitops
        ArgoApplication(self, "root", ApplicationProps(
            name=ROOT_APP, namespace=g.argocd_namespace, project=g.project,
            source=git_directory(g.repo_url, g.target_revision, f"dist/{applications.folder}"),
            destination_server=g.destination_server,
            # Deleting the root must not cascade into deleting the whole cluster.
            cascade_delete=False,
        ))

"""Build the cdk8s App for a cluster and synthesize it into dist/."""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from cdk8s import App

from colocate import ROOT, config as config_mod
from colocate.synth import jobs as jobs_mod, write, vendor_render
from colocate.base import safe_yaml
from colocate.errors import InputError
from colocate.base.data_files import repository
from colocate.model import cluster as cluster_mod
from colocate.charts._base import ColocateChart
from colocate.charts.gitops import ROOT_APP, ApplicationsChart, BootstrapChart
from colocate.charts.monitoring import MonitoringChart
from colocate.charts.control_plane import ControlPlaneChart
from colocate.charts.nodes import NodePoolChart
from colocate.charts.observability import ObservabilityChart
from colocate.charts.online import OnlineChart
from colocate.charts.platform import PlatformChart
from colocate.charts.training import TrainingChart
from colocate.charts.training_control import TrainingControlChart
from colocate.charts.training_operator import TrainingOperatorChart
from colocate.charts.kueue import KueueChart
from colocate.charts.upstream import RenderedChart

DIST = ROOT / "dist"


@dataclass
class Built:
    app: App
    charts: list[ColocateChart]
    config: config_mod.Config
    cluster: cluster_mod.Cluster


def build(config: config_mod.Config | None = None, cluster: cluster_mod.Cluster | None = None,
          jobs_dir: Path | None = None, jobs_required: bool | None = None) -> Built:
    """Compose every chart. Constructs validate their props here and raise PropError. ``jobs_dir``
    defaults to the working repository's jobs/; a folder named must exist (``jobs_required``,
    default: when one is named), the default one may be missing (no job)."""
    config = config or config_mod.load()
    cluster = cluster or config.cluster
    required = jobs_dir is not None if jobs_required is None else jobs_required
    jobs = jobs_mod.load(jobs_dir or repository() / "jobs", config, required=required)
    app = App()
    node_charts = [NodePoolChart(app, props) for props in cluster.pools]
    pools = {c.pool.name: c.pool for c in node_charts}
    # The Application table: each chart declares its Applications and their sync waves.
    app_charts: list[ColocateChart] = [
        PlatformChart(app, cluster, config, pools),
        OnlineChart(app, cluster, config, pools),
        TrainingOperatorChart(app, cluster, pools),
        *([KueueChart(app, cluster, config, pools)] if config.queue else []),
        TrainingChart(app, cluster, config, pools, jobs),
        TrainingControlChart(app, cluster, config, pools),
        observability := ObservabilityChart(app, cluster),
        MonitoringChart(app, cluster, config, pools, dcgm_used_fields=observability.mixin.dcgm_fields()),
    ]
    target = vendor_render.Target(config.kubernetes_version, served_api_versions(config))
    app_charts += [RenderedChart(app, row, target) for chart in list(app_charts) for row in chart.rendered(config)]
    applications = ApplicationsChart(app, config, app_charts)
    # Last: the nodes' registry mirror serves every upstream image the charts above deploy.
    images = set().union(*(c.upstream_images for c in app_charts))
    for chart in node_charts:
        chart.add_containerd(config, images)
    bootstrap = BootstrapChart(app, config, applications)
    control_plane = ControlPlaneChart(app, admission_policies=config.admission_policies)
    return Built(app, [control_plane, *node_charts, *app_charts, applications, bootstrap], config, cluster)


def served_api_versions(config: config_mod.Config) -> tuple[str, ...]:
    """The API group/versions dist/ makes the cluster serve beyond the built-in ones: its CRDs',
    and the v1beta1 admission policies when they are on. Argo CD passes the destination's served
    versions to ``helm template --api-versions``; these are the ones a synced cluster adds."""
    out = ["argoproj.io/v1alpha1", "kubeflow.org/v1", "monitoring.coreos.com/v1", "monitoring.coreos.com/v1alpha1"]
    if config.queue:
        out.append("kueue.x-k8s.io/v1beta1")
    if config.admission_policies:
        out.append("admissionregistration.k8s.io/v1beta1")
    return tuple(sorted(out))


def manifests(built: Built, reuse: Sequence[Path] = (DIST,)) -> list[write.Manifest]:
    """Synthesize every chart (cdk8s resolves patches and labels here); a rendered chart's objects
    are read back from the first tree of ``reuse`` that holds them unchanged, else rendered."""
    out = []
    for chart in built.charts:
        out.extend(write.Manifest(chart.folder, obj) for obj in chart.objects(reuse))
    return out


def render_files(built: Built, reuse: Sequence[Path] = (DIST,)) -> dict[str, str]:
    items = manifests(built, reuse)
    apps = {c.folder: c.app_name for c in built.charts if c.is_app}
    apps[next(c.folder for c in built.charts if isinstance(c, ApplicationsChart))] = ROOT_APP
    rendered, texts = {}, {}
    for chart in built.charts:
        own = chart.rendering([m.obj for m in items if m.folder == chart.folder])
        if own is not None:
            files, rendered[chart.folder] = own
            texts.update({f"{chart.folder}/{name}": text for name, text in files.items()})
    doc = write.index(items, built.config.release, built.config.kubernetes_version, apps, rendered)
    extra = {f"{c.folder}/{path}": text for c in built.charts for path, text in c.extra_files.items()}
    return write.render(items, doc, extra, texts)


def job_files(config_path: Path | None, paths: Sequence[Path]) -> list[tuple[str, dict[str, str]]]:
    """Per job file, its name and the dist/ files synth writes for it alone (its TFJob and
    checkpoint claim), as they would land in dist/ once the file is merged into jobs/. For
    ``colocate simulate``'s addJob; a job file synth would refuse is refused here (exit 2)."""
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        raise InputError("addJob", "", f"two job files share a file name: {', '.join(sorted(names))}")
    config = config_mod.load(config_path) if config_path else config_mod.load()
    jobs = [jobs_mod.load_file(path, config) for path in paths]  # messages name the user's file
    with tempfile.TemporaryDirectory(prefix="colocate-jobs-") as tmp:
        for path in paths:
            shutil.copyfile(path, Path(tmp) / path.name)
        files = render_files(build(config, jobs_dir=Path(tmp)))
    objects = {path: [(d.get("kind"), d["metadata"].get("name")) for d in safe_yaml.load_all(text) if d]
               for path, text in files.items() if path.startswith("apps/") and path.endswith(".yaml")}
    out = []
    for job in jobs:
        wanted = {("TFJob", job.name), ("PersistentVolumeClaim", f"{job.name}-checkpoints")}
        out.append((job.name, {path: files[path] for path, kinds in objects.items() if set(kinds) & wanted}))
    return out


def synth(outdir: Path = DIST, config_path: Path | None = None, jobs_dir: Path | None = None,
          jobs_required: bool | None = None, on_swap: Callable[[], None] | None = None,
          cluster: cluster_mod.Cluster | None = None) -> dict[str, str]:
    """Build, render and write dist/. Any error before the swap leaves ``outdir`` untouched.
    ``cluster`` replaces colocate.yaml's (the benchmarks' larger mixed pool)."""
    write.check_outdir(outdir)  # before the minutes of building, not after
    files = _render(config_path, jobs_dir, jobs_required, (outdir, DIST), cluster)
    _refuse_findings(files, outdir, config_path)
    try:
        write.write_tree(files, outdir, on_swap)
    except OSError as exc:  # a full disk, a folder made read-only meanwhile: the old tree stays
        raise InputError(str(outdir), "", f"could not write the new tree ({exc.strerror or exc}); the folder is "
                         "unchanged") from None
    return files


def _refuse_findings(files: dict[str, str], outdir: Path, config_path: Path | None) -> None:
    """synth refuses a tree its own check would refuse (a job that breaks the namespace's quota,
    more GPUs than the cluster has): the rules' errors, before anything is written."""
    from colocate import checker
    from colocate.checker.formats import escape

    config = config_mod.load(config_path) if config_path else config_mod.load()
    errors = checker.judge_rendered({outdir / rel: text for rel, text in files.items()}, config)
    if errors:
        shown = "".join(f"\n  {escape(f'{f.rule} {f.file}: {f.ref}: {f.field}: {f.message}')}" for f in errors[:5])
        more = f"\n  and {len(errors) - 5} more" if len(errors) > 5 else ""
        raise InputError(str(outdir), "", f"not written: `colocate check` would refuse the tree "
                         f"({len(errors)} errors){shown}{more}")


def stale(outdir: Path = DIST, config_path: Path | None = None,
          jobs_dir: Path | None = None, jobs_required: bool | None = None) -> write.TreeDiff:
    """What ``synth`` would change in ``outdir``; writes nothing."""
    return write.compare_tree(_render(config_path, jobs_dir, jobs_required, (outdir, DIST)), outdir)


def _render(config_path: Path | None, jobs_dir: Path | None, jobs_required: bool | None = None,
            reuse: Sequence[Path] = (DIST,), cluster: cluster_mod.Cluster | None = None) -> dict[str, str]:
    config = config_mod.load(config_path) if config_path else config_mod.load()
    return render_files(build(config, cluster, jobs_dir=jobs_dir, jobs_required=jobs_required), reuse)

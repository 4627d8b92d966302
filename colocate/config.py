"""colocate.yaml: the cluster and its per-environment settings, validated before anything is built."""
from __future__ import annotations

import difflib
import ipaddress
import json
import re
import zoneinfo
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from colocate.base.validated_yaml import load_yaml_file, refuse_control_characters, validate
from colocate.errors import InputError
from colocate.model import cluster_yaml
from colocate.model.cluster import Cluster
from colocate.model.pools import pool_schema
from colocate.model.scheduling import ImageRef
from colocate.base.data_files import CONFIG_NAME, data_path, display, repository

#: colocate's own image, built from the Dockerfile at the repository root.
COLOCATE_IMAGE_NAME = "colocate"

_SCHEMA = json.loads(data_path("colocate.base", "data", "schemas", "config.schema.json").read_text())
# A pool's properties have one home, the model's field list (CONTRIBUTING.md "Recipe: add a pool field").
_SCHEMA["$defs"]["pool"] = pool_schema()


@dataclass(frozen=True)
class GitOps:
    repo_url: str
    target_revision: str
    argocd_namespace: str = "argocd"
    project: str = "default"
    destination_server: str = "https://kubernetes.default.svc"
    #: Oldest Argo CD (major, minor) that syncs the repository.
    min_argocd_version: tuple[int, int] = (2, 9)


@dataclass(frozen=True)
class AlertmanagerSecret:
    """The existing Secret with the Alertmanager receivers' credentials, and its keys."""

    name: str
    paging_url_key: str = "paging-url"
    chat_url_key: str = "chat-url"
    #: None: the chat webhook takes no token.
    chat_token_key: str | None = "chat-token"
    #: None: no dead man's switch; the Watchdog alert goes nowhere.
    heartbeat_url_key: str | None = "heartbeat-url"


@dataclass(frozen=True)
class Monitoring:
    grafana_admin_secret: str
    alertmanager_secret: AlertmanagerSecret
    retention: str
    storage_size: str
    #: StorageClass of Prometheus' and Alertmanager's volumes (not the shared NFS class).
    storage_class: str = "monitoring-local"


@dataclass(frozen=True)
class Simulation:
    """Release tags of the real components ``colocate simulate`` builds and runs."""

    kubernetes: str
    etcd: str
    kwok: str
    argocd: str


@dataclass(frozen=True)
class Kueue:
    """Kueue, the admission queue of training: its release and the all-or-nothing timeout."""

    version: str
    #: waitForPodsReady.timeout: a job whose pods are not all ready by then is evicted and requeued.
    pods_ready_timeout_seconds: int = 600
    #: Whether synth writes Kueue and the queue into dist/ and training waits in it (the reference
    #: says true; absent, false: docs/queue.md). The release is built for simulate either way.
    admit_training: bool = False


@dataclass(frozen=True)
class Schedule:
    """The planned day: training is paused before the day peak and resumed after it."""

    #: IANA time zone of the times below (a CronJob's ``spec.timeZone``).
    time_zone: str
    #: When the day peak starts and ends, minutes after local midnight. End before start: the
    #: peak runs over midnight.
    peak_start: int
    peak_end: int
    #: Minutes before ``peak_start`` that pause runs, so pods have saved and left by the peak.
    pause_lead_minutes: int = 10

    @property
    def pause_at(self) -> int:
        """Minutes after local midnight at which pause runs."""
        return (self.peak_start - self.pause_lead_minutes) % (24 * 60)

    @property
    def resume_at(self) -> int:
        return self.peak_end

    @property
    def night_minutes(self) -> int:
        """Minutes from the resume to the pause: how long training may run each day."""
        return (self.pause_at - self.resume_at) % (24 * 60)


@dataclass(frozen=True)
class Config:
    release: str
    kubernetes_version: str
    gitops: GitOps
    registry_host: str
    registry_cidrs: tuple[str, ...]
    #: Pull upstream images as ``<registry_host>/<upstream repository>`` (a Harbor proxy cache).
    mirror_upstream_images: bool
    shared_storage_class: str
    training_operator_version: str
    monitoring: Monitoring
    #: The cluster's shape: colocate.yaml's ``cluster`` section (colocate/model/cluster_yaml.py).
    cluster: Cluster
    #: Deploy the NVIDIA device plugin (rendered from its vendored chart); False where the GPU
    #: operator runs it.
    device_plugin: bool = False
    #: Harbor's CA certificate on the nodes (the provisioner installs it; never in git). None
    #: when the nodes' system trust store already has Harbor's CA.
    registry_ca_file: str | None = None
    #: Existing image pull Secret for Harbor's private projects, in every namespace whose pods
    #: pull from them; None when those projects allow anonymous pulls.
    registry_pull_secret: str | None = None
    #: Harbor proxy-cache project per upstream registry (``quay.io`` -> ``quay``).
    registry_proxy_projects: Mapping[str, str] = field(default_factory=dict)
    #: None: colocate.yaml has no ``simulation`` section, so ``colocate simulate`` cannot run.
    simulation: Simulation | None = None
    #: Harbor project colocate's own image is pushed to.
    image_project: str = "platform"
    #: None: colocate.yaml has no ``schedule`` section, so synth emits no pause/resume CronJobs.
    schedule: Schedule | None = None
    #: admission.policies: synth emits a ValidatingAdmissionPolicy per enforced rule and the
    #: API server flags 1.28 needs for them (docs/admission.md). Off unless colocate.yaml says so.
    admission_policies: bool = False
    #: admission.validationActions: what the error rules' bindings do, ("Deny",) unless colocate.yaml
    #: says ["Warn", "Audit"] for a rollout (docs/admission.md, "Rollout").
    admission_actions: tuple[str, ...] = ("Deny",)
    #: None: colocate.yaml has no ``kueue`` section, so training is not queued.
    kueue: Kueue | None = None

    @property
    def queue(self) -> Kueue | None:
        """Kueue when it admits training (colocate.yaml ``kueue.admitTraining``), else None."""
        return self.kueue if self.kueue and self.kueue.admit_training else None

    @property
    def colocate_image(self) -> str:
        """colocate's own image (the Dockerfile at the repository root), tagged with the release:
        ``<registry host>/<image project>/colocate:<release>``."""
        return f"{self.registry_host}/{self.image_project}/{COLOCATE_IMAGE_NAME}:{self.release}"
    #: The file it was read from, as messages name it (``--config`` may name another).
    file: str = CONFIG_NAME

    def proxy_project(self, registry: str, image: str) -> str:
        """The Harbor proxy-cache project that serves ``registry``; bad input when there is none."""
        if registry not in self.registry_proxy_projects:
            raise InputError(self.file, "$.registry.proxyCacheProjects",
                             f"no Harbor proxy-cache project for {registry} (image {image}); "
                             f"add `{registry}: <project>` and create that project in Harbor")
        return self.registry_proxy_projects[registry]

    def image(self, upstream: str) -> str:
        """Where the cluster pulls an upstream image from: Harbor's proxy-cache project for its
        registry (``nvcr.io/nvidia/x:1`` -> ``<host>/nvcr/nvidia/x:1``). Harbor drops the project
        and asks the upstream registry for the rest, so the path keeps Docker Hub's ``library/``."""
        if not self.mirror_upstream_images:
            return upstream
        ref = ImageRef.parse(upstream)
        return ref.moved_to(f"{self.registry_host}/{self.proxy_project(ref.host, upstream)}")


def _monitoring_class(data: dict, file: str) -> str:
    """Prometheus' TSDB needs a POSIX local or block file system: never the shared NFS class."""
    name = data["monitoring"].get("storageClass", "monitoring-local")
    if name == data["storage"]["sharedClass"]:
        raise InputError(file, "$.monitoring.storageClass", f"{name!r} is storage.sharedClass, the ReadWriteMany (NFS) "
                         "class; Prometheus does not support NFS for its TSDB (prometheus/prometheus docs/storage.md): "
                         "name a local or block storage class (docs/monitoring.md)")
    return name


def _alertmanager_secret(data: dict) -> AlertmanagerSecret:
    keys = {"pagingURLKey": "paging_url_key", "chatURLKey": "chat_url_key", "chatTokenKey": "chat_token_key",
            "heartbeatURLKey": "heartbeat_url_key"}
    return AlertmanagerSecret(name=data["name"], **{field: data[key] for key, field in keys.items() if key in data})


def _minutes(value: object) -> int:
    """``HH:MM`` (already matched by the schema) as minutes after midnight."""
    hours, _, minutes = str(value).partition(":")
    return int(hours) * 60 + int(minutes)


def _unquoted_times(data: dict, file: str) -> None:
    """YAML 1.1 (PyYAML) reads an unquoted 22:00 as the base-60 number 1320: say so, instead of
    the schema's "is not of type 'string'"."""
    peak = ((data.get("schedule") or {}) if isinstance(data.get("schedule"), dict) else {}).get("dayPeak")
    for key in ("start", "end"):
        value = peak.get(key) if isinstance(peak, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            hours, minutes = divmod(value, 60)
            raise InputError(file, f"$.schedule.dayPeak.{key}", f"{value} is a number: YAML reads an unquoted "
                             f"{hours}:{minutes:02d} as {value} (base 60); quote the time: '{hours:02d}:{minutes:02d}'")


def _time_zone(file: str, name: str) -> str:
    """An IANA time zone the CronJob controller can load: kubernetes v1.28.15
    pkg/apis/batch/validation/validation.go validateTimeZone refuses ``Local`` and any name Go's
    time.LoadLocation cannot load; Python's tz database stands in for Go's here."""
    if name.lower() == "local" or name not in _zones(file):
        close = difflib.get_close_matches(name, sorted(_zones(file)), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        why = "is the node's zone, which a CronJob may not use" if name.lower() == "local" else \
            "is not an IANA time zone"
        raise InputError(file, "$.schedule.timeZone", f"{name!r} {why}{hint}; write a zone such as Europe/Berlin "
                         "or UTC (the names in the IANA tz database)")
    return name


def _zones(file: str) -> set[str]:
    zones = zoneinfo.available_timezones()
    if not zones:
        raise InputError(file, "$.schedule.timeZone", "this machine has no time zone database to check "
                         "the zone against: install the tzdata package (Debian) or pip install tzdata")
    return zones


def _schedule(data: dict | None, file: str) -> Schedule | None:
    if data is None:
        return None
    peak = data["dayPeak"]
    start, end = _minutes(peak["start"]), _minutes(peak["end"])
    if start == end:
        raise InputError(file, "$.schedule.dayPeak.end", f"{peak['end']!r} is when the peak starts: give the peak "
                         "a length (end before start means it runs over midnight)")
    lead, night = data.get("pauseLeadMinutes", 10), (start - end) % (24 * 60)
    if lead >= night:
        raise InputError(file, "$.schedule.pauseLeadMinutes", f"{lead} minutes before {peak['start']} is not after "
                         f"the peak's end ({peak['end']}): the night between them is {night} minutes; lower it")
    return Schedule(time_zone=_time_zone(file, data["timeZone"]), peak_start=start, peak_end=end,
                    pause_lead_minutes=data.get("pauseLeadMinutes", 10))
def reference_path() -> Path:
    """The reference configuration shipped in the package (a copy of the repository's
    colocate.yaml, tests/test_packaging.py keeps them equal): what ``check`` uses outside any
    colocate repository, and what ``colocate init`` writes."""
    return data_path("colocate.base", "data", "reference", CONFIG_NAME)


def default_path() -> Path:
    """colocate.yaml of the working repository (colocate.base.data_files.repository)."""
    return repository() / CONFIG_NAME


def _served(version: str, file: str) -> None:
    """kubernetesVersion must be one the schemas check and synth validate against know (the PyPI
    package kubernetes-validate ships one folder per version), else it fails only in check."""
    from colocate.base.schema_cache import kubernetes_validate_dir

    folder = kubernetes_validate_dir()
    if folder.is_dir() and not (folder / f"v{version}-local-strict").is_dir():
        known = sorted((p.name[1:].removesuffix("-local-strict") for p in folder.glob("v*-local-strict")),
                       key=lambda v: tuple(int(x) for x in v.split(".") if x.isdigit()))
        raise InputError(file, "$.kubernetesVersion", f"{version!r} has no schemas in kubernetes-validate "
                         f"(it knows {known[0]} to {known[-1]}); use a released version it knows, such as {known[-1]}")


def kubernetes_version(path: Path | None = None) -> str | None:
    """The configuration's kubernetesVersion, read without validating the rest (``check`` starts
    kubeconform with it, then validates while kubeconform runs); None when it is not a version
    kubernetes-validate has schemas for, or the file cannot be read: :func:`load` then says why."""
    path = path or default_path()
    try:
        data = load_yaml_file(path, str(path))
        version = data.get("kubernetesVersion") if isinstance(data, dict) else None
        if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+\.\d+", version):
            return None
        _served(version, str(path))
    except InputError:
        return None
    return version


def load(path: Path | None = None, schema_checked: bool = False) -> Config:
    """The configuration; ``schema_checked``: these very bytes passed the schema before (the
    verdict cache knows), so validating them again could only agree."""
    path = path or default_path()
    file = display(path)
    data = load_yaml_file(path, file)
    refuse_control_characters(data, file)
    if isinstance(data, dict):
        _unquoted_times(data, file)
    if not schema_checked:
        validate(data, _SCHEMA, file)
    _served(data["kubernetesVersion"], file)
    for index, cidr in enumerate(data["registry"]["cidrs"]):
        try:
            ipaddress.ip_network(cidr)
        except ValueError as exc:
            raise InputError(file, f"$.registry.cidrs[{index}]", str(exc)) from None
    gitops = data["gitops"]
    return Config(
        release=data["release"],
        kubernetes_version=data["kubernetesVersion"],
        gitops=GitOps(
            repo_url=gitops["repoURL"],
            target_revision=gitops["targetRevision"],
            argocd_namespace=gitops.get("argocdNamespace", "argocd"),
            project=gitops.get("project", "default"),
            destination_server=gitops.get("destinationServer", "https://kubernetes.default.svc"),
            **({"min_argocd_version": tuple(int(x) for x in gitops["minArgoCDVersion"].split("."))}
               if "minArgoCDVersion" in gitops else {}),
        ),
        registry_host=data["registry"]["host"],
        registry_cidrs=tuple(data["registry"]["cidrs"]),
        mirror_upstream_images=data["registry"].get("mirrorUpstreamImages", True),
        registry_ca_file=data["registry"].get("caFile"),
        registry_pull_secret=data["registry"].get("pullSecret"),
        registry_proxy_projects=dict(data["registry"].get("proxyCacheProjects") or {}),
        shared_storage_class=data["storage"]["sharedClass"],
        training_operator_version=data["trainingOperator"]["version"],
        device_plugin=bool((data.get("gpu") or {}).get("devicePlugin")),
        simulation=Simulation(**data["simulation"]) if "simulation" in data else None,
        image_project=data["registry"].get("imageProject", "platform"),
        schedule=_schedule(data.get("schedule"), file),
        admission_policies=bool((data.get("admission") or {}).get("policies", False)),
        admission_actions=tuple((data.get("admission") or {}).get("validationActions", ("Deny",))),
        kueue=_kueue(data.get("kueue")),
        monitoring=Monitoring(
            grafana_admin_secret=data["monitoring"]["grafanaAdminSecret"],
            alertmanager_secret=_alertmanager_secret(data["monitoring"]["alertmanagerSecret"]),
            retention=data["monitoring"]["retention"],
            storage_size=data["monitoring"]["storageSize"],
            storage_class=_monitoring_class(data, file),
        ),
        cluster=cluster_yaml.load(data["cluster"], data["registry"]["host"], file),
        file=file,
    )


def _kueue(data: Mapping | None) -> Kueue | None:
    if data is None:
        return None
    return Kueue(version=data["version"], pods_ready_timeout_seconds=data.get("podsReadyTimeoutSeconds", 600),
                 admit_training=data.get("admitTraining", False))

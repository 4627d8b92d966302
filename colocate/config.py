"""colocate.yaml: the per-environment settings, validated before anything is built."""
from __future__ import annotations

import difflib
import errno
import functools
import ipaddress
import json
import os
import re
import zoneinfo
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import yaml

if TYPE_CHECKING:
    import jsonschema

from colocate.base import safe_yaml
from colocate.errors import InputError
from colocate.model.scheduling import ImageRef
from colocate.base.data_files import CONFIG_NAME, data_path, display, repository

#: colocate's own image, built from the Dockerfile at the repository root.
COLOCATE_IMAGE_NAME = "colocate"

_SCHEMA = json.loads(data_path("colocate.base", "data", "schemas", "config.schema.json").read_text())


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


def json_path(parts) -> str:
    """``['gitops', 'repoURL']`` -> ``$.gitops.repoURL``; list indexes as ``[0]``."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


class _DuplicateKey(yaml.MarkedYAMLError):
    """A mapping that names a key twice: YAML forbids it, PyYAML lets the last one win."""


class _Loader(safe_yaml.SafeLoader):  # type: ignore[misc,valid-type]
    """Safe YAML (libyaml: check reads some 50 rule files per run) that refuses a duplicate key:
    a job file that shows ``gpus: 0`` first must not quietly ask for the later ``gpus: 12``."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    key = (key_node.tag, key_node.value)
                    line = key_node.start_mark.line + 1
                    if key in seen:
                        raise _DuplicateKey(problem=f"key {key_node.value!r} appears twice (lines {seen[key]} and "
                                                    f"{line}): the last one would win; keep one",
                                            problem_mark=key_node.start_mark)
                    seen[key] = line
        return super().construct_mapping(node, deep)


_LOADER = _Loader


class _NotDecimal(yaml.MarkedYAMLError):
    """A number YAML 1.1 reads in a way a reader of the file would not: ``010`` is 8."""


_DECIMAL = re.compile(r"[-+]?(0|[1-9][0-9]*)?(\.[0-9]*)?([eE][-+]?[0-9]+)?\Z")


class _DecimalLoader(_Loader):
    """:class:`_Loader` that refuses the numbers only YAML 1.1 (PyYAML's, not the YAML 1.2 of most
    editors and of Kubernetes' Go parser) reads as such: ``010`` (octal, 8), ``0x10`` (16),
    ``0b10`` (2), ``1:00`` (base 60, 60), ``1_0`` (10). A job file's ``replicas: 010`` must not
    quietly ask for 8."""

    def _decimal(self, node, construct):
        value = construct(self, node)
        text = node.value
        if not _DECIMAL.match(text) and text.lower().lstrip("+-.") not in ("inf", "nan"):
            kind = ("base 60" if ":" in text else "hexadecimal" if "x" in text.lower() else "binary"
                    if "b" in text.lower() else "octal" if text.lstrip("+-").startswith("0") and "_" not in text
                    else "a number with '_'")
            raise _NotDecimal(problem=f"{text} is {kind} in YAML 1.1 and reads as {value!r}: write the decimal "
                                      f"number you mean (without a leading zero, ':' or '_'), or quote a string",
                              problem_mark=node.start_mark)
        return value

    def _int(self, node):
        return self._decimal(node, yaml.SafeLoader.construct_yaml_int)

    def _float(self, node):
        return self._decimal(node, yaml.SafeLoader.construct_yaml_float)


_DecimalLoader.add_constructor("tag:yaml.org,2002:int", _DecimalLoader._int)
_DecimalLoader.add_constructor("tag:yaml.org,2002:float", _DecimalLoader._float)


def load_yaml_file(path: Path, name: str | None = None, decimal: bool = False) -> object:
    """Parse one YAML document; a syntax error names the file (``name``, default the path) and line.
    ``decimal``: numbers only YAML 1.1 reads as such (``010`` is 8) are refused (_DecimalLoader)."""
    name = name or str(path)
    try:
        # A FIFO or a device would block the read for ever, or never end.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError(name, "", "not a regular file")
        return yaml.load(path.read_text(), Loader=_DecimalLoader if decimal else _LOADER)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError(name, "", "broken symbolic link") from None
        raise InputError(name, "", "file not found") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(name, "", "symbolic link loop") from None
        raise InputError(name, "", f"cannot read the file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(name, "", f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"{mark.line + 1}" if mark else ""
        if isinstance(exc, (_DuplicateKey, _NotDecimal)):
            raise InputError(name, line, exc.problem) from None
        raise InputError(name, line, f"not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(name, "", f"not valid YAML: {exc}") from None


def validate(data: object, schema: dict, file: str) -> None:
    """Raise InputError listing every schema violation (unknown keys first, with a did-you-mean),
    each with its JSON path and, where the schema explains a form (``errorMessage``, the
    ajv-errors keyword, else ``description``), that explanation instead of a regular expression."""
    validator = _validator_class()(schema)
    errors = sorted(validator.iter_errors(data),
                    key=lambda e: (e.validator != "additionalProperties", list(map(str, e.absolute_path)), e.message))
    if not errors:
        return
    lines = list(dict.fromkeys(f"{json_path(e.absolute_path)}: {_in_words(e, validator)}" for e in errors))
    first, _, message = lines[0].partition(": ")
    rest = "".join(f"\n  {file}:{line}" for line in lines[1:])
    raise InputError(file, first, message + rest)


@functools.cache
def _validator_class():
    """Draft 2020-12 as the schemas mean it, where Python's reading differs:

    - ``pattern``: the schemas' dialect is ECMA-262, whose ``$`` matches only at the end of the
      string; Python's also matches before a final newline, so ``^[a-z]+$`` took ``"argocd\\n"``.
      An unescaped ``$`` is read as ``\\Z`` (jsonschema matches with ``re.search``).
    - ``integer``: a whole number written as an integer. jsonschema counts ``10.0`` as one, and
      ``pauseLeadMinutes: 10.0`` then wrote the cron schedule ``50.0 7.0 * * *``.
    """
    import jsonschema  # here: `colocate check` answered from its cache validates nothing

    def pattern(validator, value, instance, schema):
        if validator.is_type(instance, "string") and not _ecma_pattern(value).search(instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {value!r}")

    base = jsonschema.Draft202012Validator
    types = base.TYPE_CHECKER.redefine("integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool))
    return jsonschema.validators.extend(base, {"pattern": pattern}, type_checker=types)


@functools.cache
def _ecma_pattern(pattern: str) -> re.Pattern:
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


#: Control characters (Unicode category Cc: C0, DEL, C1), newlines and tabs included: no value of
#: colocate.yaml is text of more than one line, and each lands in file names, YAML, TOML or logs.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def refuse_control_characters(data: object, file: str, path: str = "$") -> None:
    """InputError naming the key of the first key or value holding a control character."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}"
            if isinstance(key, str) and _CONTROL.search(key):
                raise InputError(file, path, f"the key {key!r} holds a control character "
                                 f"(U+{ord(_CONTROL.search(key).group()):04X}); remove it")
            refuse_control_characters(value, file, where)
    elif isinstance(data, list):
        for i, item in enumerate(data):
            refuse_control_characters(item, file, f"{path}[{i}]")
    elif isinstance(data, str) and _CONTROL.search(data):
        char = _CONTROL.search(data).group()
        raise InputError(file, path, f"{data!r} holds a control character (U+{ord(char):04X}"
                         f"{', a new line: a YAML block scalar (|) ends with one' if char == chr(10) else ''}); "
                         "write the value on one line, without it")


#: Keywords whose own message shows a regular expression or a sub-schema instead of words.
_FORM_KEYWORDS = ("pattern", "anyOf", "oneOf", "not")


#: What a YAML 1.1 boolean most likely was before the parser read it (for the quote-it hint).
_YAML_WORDS = {True: "yes", False: "no"}


def _in_words(error: jsonschema.ValidationError, validator: jsonschema.Draft202012Validator) -> str:
    """One schema error as a person can act on it: unknown keys and enum values with a
    did-you-mean, an empty file said so, a value of the wrong form explained in words with,
    where one is close, the valid value it was probably meant to be."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(schema.get("properties") or {})
        hints = [f"{key!r}{_did_you_mean(str(key), known)}" for key in error.instance if key not in known]
        return f"unknown key {', '.join(hints)}; known keys: {', '.join(known)}"
    if error.validator == "type" and not error.absolute_path and not isinstance(error.instance, dict):
        needs = ", ".join(schema.get("required") or ())
        what = "the file is empty" if error.instance is None else f"the file holds a {type(error.instance).__name__}"
        return f"{what}; it must map keys to values" + (f", at least {needs}" if needs else "")
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {', '.join(map(str, schema['enum']))}" + _did_you_mean(
            str(error.instance), [str(v) for v in schema["enum"]])
    if error.validator == "type":
        hint = ""
        if isinstance(error.instance, bool) and "string" in str(schema.get("type")):
            hint = ("; YAML reads yes, no, on, off, true and false as booleans: quote it "
                    f"('{_YAML_WORDS.get(error.instance, str(error.instance).lower())}')")
        return error.message + hint + _close(error, validator, _retyped(error.instance))
    # ajv-errors' errorMessage: one text for the value's form, or one per failing keyword.
    explained = schema.get("errorMessage")
    if isinstance(explained, dict):
        explained = explained.get(error.validator)
    elif error.validator not in _FORM_KEYWORDS:
        explained = None
    if explained is None and error.validator in _FORM_KEYWORDS and "description" in schema:
        explained = f"is not of the expected form: {schema['description']}"
    if explained is None:
        return error.message
    return f"{error.instance!r} {explained}" + _close(error, validator, _respelt(error.instance))


def _did_you_mean(word: str, known: list[str]) -> str:
    folded = {k.lower(): k for k in known}
    close = folded.get(word.lower()) or next(iter(difflib.get_close_matches(word, known, n=1, cutoff=0.6)), None)
    return f" (did you mean {close!r}?)" if close else ""


def _close(error: jsonschema.ValidationError, validator: jsonschema.Draft202012Validator, candidates: list) -> str:
    """``; did you mean X?`` for the first candidate the failing (sub)schema accepts, else nothing."""
    check = validator.evolve(schema=error.schema)
    close = next((c for c in candidates if c != error.instance and check.is_valid(c)), None)
    if close is None:
        return ""
    return f"; did you mean {close!r}?" if isinstance(close, str) else f"; did you mean {json.dumps(close)}?"


def _retyped(value: object) -> list[object]:
    """A quoted number or boolean unquoted (replicas: "3"), one value as a one-item list."""
    out: list[object] = [[value]]
    if isinstance(value, str):
        try:
            out.insert(0, safe_yaml.load(value))
        except yaml.YAMLError:
            pass
    return out


def _respelt(value: object) -> list[object]:
    """Slips of the hand in a text value: spaces, upper case, a size in decimal or lower-case
    units meant as the binary unit (4GB, 4G, 4gi, 500m of memory -> 4Gi, 500Mi)."""
    if not isinstance(value, str):
        return []
    text = "".join(value.split())
    size = re.fullmatch(r"([0-9]+)([kKmMgGtT])[iI]?[bB]?", text)
    return [text, text.lower(), *([f"{size[1]}{size[2].upper()}i"] if size else [])]


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
        file=file,
    )


def _kueue(data: Mapping | None) -> Kueue | None:
    if data is None:
        return None
    return Kueue(version=data["version"], pods_ready_timeout_seconds=data.get("podsReadyTimeoutSeconds", 600),
                 admit_training=data.get("admitTraining", False))

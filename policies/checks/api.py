"""What the API server rejects and a schema cannot see: values compared with each other, sizes,
names that must be unique, references to other objects. Each check follows the validation
function docs/api-server.md names (kubernetes v1.28.15)."""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Iterator, Mapping

from colocate.model import cron, quantity
from colocate.checker import Index, Rule, Violation
from colocate.model import pods
from colocate.model.names import BUILTIN_PRIORITY_CLASSES, GPU
from colocate.policies.checks.gitops import ANNOTATIONS_LIMIT

#: ConfigMap and Secret data hold at most 1 MiB (pkg/apis/core/types.go MaxSecretSize).
DATA_LIMIT = 1024 * 1024


def _overcommit_allowed(name: str) -> bool:
    """helper.IsOvercommitAllowed: native resources (no '/', or containing "kubernetes.io/"),
    hugepages excepted; an extended resource such as nvidia.com/gpu needs request == limit."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _quantity(value: Any):
    try:
        return quantity.parse(value)
    except (TypeError, ValueError, ArithmeticError):
        return None


def request_above_limit(index: Index, rule: Rule) -> Iterator[Violation]:
    """ValidateResourceRequirements: a request above its limit; for extended resources and
    hugepages a request other than the limit. GPUs are COL101's (one finding per fault)."""
    for pod in index.pods():
        for path, container in pods.containers(pod, pods.ALL):
            resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
            requests, limits = resources.get("requests"), resources.get("limits")
            if not isinstance(requests, dict) or not isinstance(limits, dict):
                continue
            for name, value in requests.items():
                if name == GPU:
                    continue
                request, limit = _quantity(value), _quantity(limits.get(name))
                if request is None or limit is None:
                    continue
                if request > limit:
                    yield Violation(pod.doc, f"{path}.resources.requests.{name}",
                                    f"request {value} is above the limit {limits[name]}")
                elif request != limit and not _overcommit_allowed(str(name)):
                    yield Violation(pod.doc, f"{path}.resources.requests.{name}",
                                    f"{name} cannot be overcommitted: request {value} must equal the limit {limits[name]}")


def _matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """metav1.LabelSelectorAsSelector(...).Matches: every matchLabels pair and every expression."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if key not in labels or str(labels[key]) != str(value):
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), [str(v) for v in expr.get("values") or []]
        present = key in labels
        if op == "In" and not (present and str(labels[key]) in values):
            return False
        if op == "NotIn" and present and str(labels[key]) in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


#: Kinds whose validation compares spec.selector with the template labels (apps: ValidateDeploymentSpec,
#: ValidateReplicaSetSpec, ValidateStatefulSetSpec, ValidateDaemonSetSpec; batch: validateJobSpec
#: with manualSelector; core: ValidateReplicationControllerSpec, whose selector is a plain map).
_SELECTOR_KINDS = {"Deployment": "apps", "ReplicaSet": "apps", "StatefulSet": "apps", "DaemonSet": "apps",
                   "Job": "batch", "ReplicationController": ""}


def selector_matches_template(index: Index, rule: Rule) -> Iterator[Violation]:
    """The workload's selector selects its own pod template's labels."""
    for pod in index.pods():
        doc = pod.doc
        if _SELECTOR_KINDS.get(doc.kind) != doc.group:
            continue
        spec = doc.obj.get("spec") or {}
        selector = spec.get("selector")
        if doc.kind == "ReplicationController":
            # An empty selector is defaulted from the template labels.
            selector = {"matchLabels": selector} if isinstance(selector, dict) and selector else None
        elif doc.kind == "Job" and not spec.get("manualSelector"):
            continue  # the Job controller generates selector and labels itself
        if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            continue  # empty or missing selectors are the schema's and kubeconform's
        if not _matches(selector, pod.labels):
            yield Violation(doc, "spec.selector", f"selects {_describe(selector)}, the template's labels are "
                                                  f"{dict(sorted(pod.labels.items()))}")


def _describe(selector: Mapping[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    parts += [f"{e.get('key')} {e.get('operator')} {e.get('values') or ''}".rstrip()
              for e in selector.get("matchExpressions") or []]
    return ", ".join(parts)


def _annotations_size(annotations: Any) -> int:
    """apimachinery ValidateAnnotationsSize: the byte length of every key and value."""
    if not isinstance(annotations, dict):
        return 0
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())


def annotations_size(index: Index, rule: Rule) -> Iterator[Violation]:
    """metadata.annotations of an object, and of a pod template, within 256 KiB."""
    for doc in index.api_objects():
        size = _annotations_size(doc.metadata.get("annotations"))
        if size > ANNOTATIONS_LIMIT:
            yield Violation(doc, "metadata.annotations", f"{size} bytes, the limit is {ANNOTATIONS_LIMIT}")
    for pod in index.pods():
        template = pod.path.rpartition(".spec")[0]
        if not template or pod.doc.kind == "Pod":
            continue
        node: Any = pod.doc.obj
        for key in template.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        size = _annotations_size(((node or {}).get("metadata") or {}).get("annotations"))
        if size > ANNOTATIONS_LIMIT:
            yield Violation(pod.doc, f"{template}.metadata.annotations", f"{size} bytes, the limit is {ANNOTATIONS_LIMIT}")


def _decoded_size(value: Any) -> int:
    """Base64 data as the API server stores it: decoded bytes (an undecodable value counts as is)."""
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value).encode())


def data_size(index: Index, rule: Rule) -> Iterator[Violation]:
    """ValidateConfigMap (data + binaryData) and ValidateSecret (data, stringData merged into it
    on conversion) within MaxSecretSize."""
    for doc in index.api_objects():
        if doc.group != "":
            continue
        sizes: dict[str, int] = {}
        data = doc.obj.get("data") if isinstance(doc.obj.get("data"), dict) else {}
        if doc.kind == "ConfigMap":
            sizes.update({k: len(str(v).encode()) for k, v in data.items()})
            binary = doc.obj.get("binaryData") if isinstance(doc.obj.get("binaryData"), dict) else {}
            sizes.update({f"binaryData:{k}": _decoded_size(v) for k, v in binary.items()})
        else:
            sizes.update({k: _decoded_size(v) for k, v in data.items()})
            string_data = doc.obj.get("stringData") if isinstance(doc.obj.get("stringData"), dict) else {}
            sizes.update({k: len(str(v).encode()) for k, v in string_data.items()})
        total = sum(sizes.values())
        if total > DATA_LIMIT:
            yield Violation(doc, "data", f"{total} bytes, the limit is {DATA_LIMIT}")


def duplicate_names(index: Index, rule: Rule) -> Iterator[Violation]:
    """Container names unique across containers, init and ephemeral containers (validateContainers,
    validateInitContainers, validateEphemeralContainers); port names unique within a container
    (validateContainerPorts); a hostPort/protocol/hostIP once among the containers
    (checkHostPortConflicts; init containers each on their own, they run one at a time)."""
    for pod in index.pods():
        seen: set[str] = set()
        host_ports: set[str] = set()
        for path, container in pods.containers(pod, pods.ALL):
            name = container.get("name")
            if isinstance(name, str) and name:
                if name in seen:
                    yield Violation(pod.doc, f"{path}.name", f"container name {name!r} is used twice")
                seen.add(name)
            ports = container.get("ports")
            port_names: set[str] = set()
            own_host_ports: set[str] = set()
            for i, port in enumerate(ports if isinstance(ports, list) else []):
                if not isinstance(port, dict):
                    continue
                port_name = port.get("name")
                if port_name:
                    if port_name in port_names:
                        yield Violation(pod.doc, f"{path}.ports[{i}].name", f"port name {port_name!r} is used twice")
                    port_names.add(port_name)
                if port.get("hostPort"):
                    key = f"{port.get('protocol') or 'TCP'}/{port.get('hostIP') or ''}/{port['hostPort']}"
                    pool = own_host_ports if ".initContainers[" in path else host_ports
                    if key in pool:
                        yield Violation(pod.doc, f"{path}.ports[{i}].hostPort", f"host port {key} is used twice")
                    pool.add(key)


def priority_class_exists(index: Index, rule: Rule) -> Iterator[Violation]:
    """The priority admission plugin refuses a pod whose priorityClassName no PriorityClass defines."""
    known = set(BUILTIN_PRIORITY_CLASSES) | {t.name for t in index.ctx.cluster.tiers}
    known |= {d.name for d in index.of_kind("PriorityClass") if d.group == "scheduling.k8s.io"}
    for pod in index.pods():
        name = pod.spec.get("priorityClassName")
        if name and name not in known:
            yield Violation(pod.doc, f"{pod.path}.priorityClassName", f"no PriorityClass is named {name!r}")


#: What a v1beta1 ValidatingAdmissionPolicy needs on a 1.28 API server (colocate/rules/admission.py):
#: the feature gate, and the API version served (api/beta and api/all serve every beta version).
_GATE = ("feature-gates", "ValidatingAdmissionPolicy", ("ValidatingAdmissionPolicy",))
_RUNTIME = ("runtime-config", "admissionregistration.k8s.io/v1beta1",
            ("admissionregistration.k8s.io/v1beta1", "api/beta", "api/all"))


def _extra_args(doc) -> dict[str, str]:
    """apiServer.extraArgs of a kubeadm ClusterConfiguration: a map (v1beta3) or a list of
    name/value pairs (v1beta4)."""
    args = (doc.obj.get("apiServer") or {}).get("extraArgs") or {}
    if isinstance(args, list):
        return {str(a.get("name")): str(a.get("value")) for a in args if isinstance(a, dict)}
    return {str(k): str(v) for k, v in args.items()} if isinstance(args, dict) else {}


def _enabled(value: str, names: tuple[str, ...], flag: str) -> bool:
    """One of ``names`` set true in a comma-separated key=value flag, as Go's strconv.ParseBool
    reads it; runtime-config also takes a key alone as key=true (k8s.io/apiserver v0.28.15
    pkg/server/resourceconfig/helpers.go getRuntimeConfigValue)."""
    settings = dict(part.strip().partition("=")[::2] for part in value.split(",") if part.strip())
    true = {"1", "t", "true"} | ({""} if flag == "runtime-config" else set())
    return any(name in settings and settings[name].strip().lower() in true for name in names)


def admission_policy_gate(index: Index, rule: Rule) -> Iterator[Violation]:
    """v1beta1 ValidatingAdmissionPolicies among the checked objects, and a checked kubeadm
    ClusterConfiguration whose API server lacks the feature gate or the runtime-config that
    1.28 needs to serve and enforce them."""
    policies = [d for d in index.of_kind("ValidatingAdmissionPolicy") + index.of_kind("ValidatingAdmissionPolicyBinding")
                if d.api_version == "admissionregistration.k8s.io/v1beta1"]
    if not policies:
        return
    for doc in index.of_kind("ClusterConfiguration"):
        if doc.group != "kubeadm.k8s.io":
            continue
        args = _extra_args(doc)
        for flag, wanted, names in (_GATE, _RUNTIME):
            if not _enabled(args.get(flag, ""), names, flag):
                shown = f"{args[flag]!r}" if flag in args else "unset"
                yield Violation(doc, f"apiServer.extraArgs.{flag}",
                                f"{shown}, without {wanted}=true, while {len(policies)} v1beta1 policy objects "
                                f"(e.g. {policies[0].kind} {policies[0].name}) are checked with it")


# --- names, schedules and counts (COL408-COL410) ------------------------------------------------

#: apimachinery v0.28.15 pkg/util/validation/validation.go: IsDNS1123Label, IsDNS1123Subdomain,
#: IsDNS1035Label (fullmatch: Python's ``$`` would also take a trailing newline).
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_DNS1123_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
LABEL_MAX, SUBDOMAIN_MAX = 63, 253
#: Kinds whose names need only be a path segment (no "/", "%", not "." or ".."):
#: pkg/apis/rbac/validation/validation.go ValidateRBACName, pkg/apis/certificates/validation
#: ValidateCertificateRequestName, pkg/apis/flowcontrol/validation (kubernetes v1.28.15).
PATH_SEGMENT_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "CertificateSigningRequest",
                                "FlowSchema", "PriorityLevelConfiguration"})
#: pkg/apis/batch/validation/validation.go ValidateCronJobCreate: the controller appends an
#: 11-character suffix to make each Job's name, which must stay a 63-character label.
CRONJOB_NAME_MAX = LABEL_MAX - 11
SYSTEM_PRIORITY_PREFIX = "system-"


def _dns_error(value: str, pattern: re.Pattern, limit: int, what: str) -> str:
    if len(value) > limit:
        return f"{value!r} is {len(value)} characters; a {what} has at most {limit}"
    if not pattern.fullmatch(value):
        return f"{value!r} is not a {what} (lower-case letters, digits and '-'" + \
            (", '.' between parts" if pattern is DNS1123_SUBDOMAIN else "") + \
            (", starting with a letter" if pattern is DNS1035_LABEL else "") + ", starting and ending alphanumeric)"
    return ""


def name_error(kind: str, name: str) -> str:
    """Why the API server refuses this name for an object of ``kind`` ("" when it accepts it):
    ValidateObjectMeta with the kind's name function (pkg/apis/core/validation/validation.go:
    ValidateNamespaceName a DNS-1123 label, ValidateServiceName a DNS-1035 label; most kinds and
    every custom resource a DNS-1123 subdomain)."""
    if kind in PATH_SEGMENT_KINDS:
        if name in (".", "..") or "/" in name or "%" in name:
            return f"{name!r} may not be '.' or '..' nor contain '/' or '%'"
        return ""
    if kind == "Namespace":
        return _dns_error(name, DNS1123_LABEL, LABEL_MAX, "DNS-1123 label")
    if kind == "Service":
        return _dns_error(name, DNS1035_LABEL, LABEL_MAX, "DNS-1035 label")
    why = _dns_error(name, DNS1123_SUBDOMAIN, SUBDOMAIN_MAX, "DNS-1123 subdomain")
    if not why and kind == "CronJob" and len(name) > CRONJOB_NAME_MAX:
        why = f"{name!r} is {len(name)} characters; a CronJob's name has at most {CRONJOB_NAME_MAX} (its Jobs add 11)"
    if not why and kind == "PriorityClass" and name.startswith(SYSTEM_PRIORITY_PREFIX) \
            and name not in BUILTIN_PRIORITY_CLASSES:
        why = f"{name!r}: names with the {SYSTEM_PRIORITY_PREFIX!r} prefix are reserved for the built-in classes"
    return why


def object_names(index: Index, rule: Rule) -> Iterator[Violation]:
    """metadata.name and metadata.namespace as the API server validates them."""
    for doc in index.api_objects():
        meta = doc.obj.get("metadata")
        if not isinstance(meta, dict):
            continue
        name, namespace = meta.get("name"), meta.get("namespace")
        if isinstance(name, str) and (name or not meta.get("generateName")):
            why = name_error(doc.kind, name) if name else "empty, and no generateName"
            if why:
                yield Violation(doc, "metadata.name", why)
        if isinstance(namespace, str) and namespace:
            why = _dns_error(namespace, DNS1123_LABEL, LABEL_MAX, "DNS-1123 label")
            if why:
                yield Violation(doc, "metadata.namespace", why)


def _time_zones() -> frozenset[str]:
    """The IANA names this machine knows (empty when it has no time zone database)."""
    import zoneinfo

    return frozenset(zoneinfo.available_timezones())


def cronjob_schedule(index: Index, rule: Rule) -> Iterator[Violation]:
    """A CronJob's schedule as robfig/cron v3.0.1 ParseStandard reads it, and its timeZone as
    time.LoadLocation does (pkg/apis/batch/validation/validation.go validateScheduleFormat,
    validateTimeZone, kubernetes v1.28.15)."""
    zones: frozenset[str] | None = None
    for doc in index.of_kind("CronJob"):
        spec = doc.obj.get("spec")
        if not isinstance(spec, dict):
            continue
        schedule = spec.get("schedule")
        if isinstance(schedule, str):
            why = cron.schedule_error(schedule)
            if why:
                yield Violation(doc, "spec.schedule", f"{schedule!r}: {why}")
        zone = spec.get("timeZone")
        if isinstance(zone, str):
            if zones is None:
                zones = _time_zones()
            if not zone:
                yield Violation(doc, "spec.timeZone", "empty: leave timeZone out or name a zone")
            elif zone.lower() == "local":
                yield Violation(doc, "spec.timeZone", f"{zone!r} is the controller's own zone, which a CronJob may not use")
            elif zones and zone not in zones:
                yield Violation(doc, "spec.timeZone", f"{zone!r} is not an IANA time zone")


def replica_range(index: Index, rule: Rule) -> Iterator[Violation]:
    """Replica counts (and a Job's parallelism and completions) outside 0..2^31-1."""
    for doc in index.api_objects():
        for path, value in pods.replica_counts(doc):
            # A whole number past int64 is read as a float, as go-yaml reads it (the schema
            # check takes an integral float for an integer); a fraction is the schema's finding.
            whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
            if whole and not isinstance(value, bool) and not 0 <= value <= pods.INT32_MAX:
                shown = int(value) if isinstance(value, int) or abs(value) < 1e16 else f"{value:g}"
                yield Violation(doc, path, f"{shown} is {'negative' if value < 0 else 'above 2^31-1 (int32)'}")

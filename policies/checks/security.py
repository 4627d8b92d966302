"""Security checks: host access only for the system components that need it (each rule file's
params.allowed), Pod Security admission, pinned images, no secrets in manifests, no escalating RBAC."""
from __future__ import annotations

from typing import Any, Iterator

from colocate.checker import Index, Rule, Violation
from colocate.checker.manifests import PodSpec
from colocate.errors import InputError
from colocate.model import pods
from colocate.model.scheduling import ImageRef
from colocate.rules.files import fill


def _runs(repository: str, image: Any) -> bool:
    """The image is of ``repository``, through any registry or mirror project in front of it."""
    if not isinstance(image, str):
        return False
    found = ImageRef.parse(image).repository
    return found == repository or found.endswith("/" + repository)


def _allowed(rule: Rule, images: list[Any], key: str) -> set[str]:
    """What the rule file's allow-list (``params.allowed``: node agents that need host access,
    each with its reason and source) grants the components running one of ``images``."""
    entries = (rule.params or {}).get("allowed", ())
    return {value for entry in entries if any(_runs(entry["image"], i) for i in images) for value in entry.get(key, ())}


def _listed(rule: Rule, image: Any) -> bool:
    return any(_runs(entry["image"], image) for entry in (rule.params or {}).get("allowed", ()))


#: Restricted Pod Security lets any container add this one capability.
UNPRIVILEGED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})


def _security_context(container: dict[str, Any]) -> dict[str, Any]:
    sc = container.get("securityContext")
    return sc if isinstance(sc, dict) else {}


def _added(container: dict[str, Any]) -> list[str]:
    caps = _security_context(container).get("capabilities")
    added = caps.get("add") if isinstance(caps, dict) else None
    return [str(c) for c in added] if isinstance(added, list) else []


def _images(pod: PodSpec) -> list[Any]:
    return [c.get("image") for _, c in pods.containers(pod, pods.ALL)]


def privileged_container(index: Index, rule: Rule) -> Iterator[Violation]:
    for pod in index.pods():
        for path, container in pods.containers(pod, pods.ALL):
            if _security_context(container).get("privileged") is True and not _listed(rule, container.get("image")):
                yield Violation(pod.doc, f"{path}.securityContext.privileged", f"{container.get('image')} is not a "
                                                                              "system component that needs it")


def host_namespaces(index: Index, rule: Rule) -> Iterator[Violation]:
    for pod in index.pods():
        allowed = _allowed(rule, _images(pod), "hostNamespaces")
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            if pod.spec.get(key) is True and key not in allowed:
                yield Violation(pod.doc, f"{pod.path}.{key}")


def _under(path: str, prefix: str) -> bool:
    path, prefix = path.rstrip("/") or "/", prefix.rstrip("/") or "/"
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def host_path_volume(index: Index, rule: Rule) -> Iterator[Violation]:
    for pod in index.pods():
        prefixes = _allowed(rule, _images(pod), "hostPaths")
        volumes = pod.spec.get("volumes")
        for i, volume in enumerate(volumes if isinstance(volumes, list) else []):
            host_path = volume.get("hostPath") if isinstance(volume, dict) else None
            if not isinstance(host_path, dict):
                continue
            path = str(host_path.get("path", ""))
            if not any(_under(path, p) for p in prefixes):
                yield Violation(pod.doc, f"{pod.path}.volumes[{i}].hostPath", f"mounts the node's {path}")


def added_capabilities(index: Index, rule: Rule) -> Iterator[Violation]:
    for pod in index.pods():
        for path, container in pods.containers(pod, pods.ALL):
            allowed = UNPRIVILEGED_CAPABILITIES | _allowed(rule, [container.get("image")], "capabilities")
            extra = sorted(set(_added(container)) - allowed)
            if extra:
                yield Violation(pod.doc, f"{path}.securityContext.capabilities.add", ", ".join(extra))


# --- Pod Security admission (k8s.io/pod-security-admission policy/check_*.go, v0.28.15) ---------
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
LEVELS = ("privileged", "baseline", "restricted")
#: check_capabilities_baseline.go capabilities_allowed_1_0.
BASELINE_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                   "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})
#: check_restrictedVolumes.go: the only volume types restricted allows.
RESTRICTED_VOLUMES = frozenset({"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                                "projected", "secret"})


def _baseline(pod: PodSpec) -> Iterator[tuple[str, str]]:
    spec = pod.spec
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key) is True:
            yield f"{pod.path}.{key}", f"{key}=true"
    for i, volume in enumerate(spec.get("volumes") or []):
        if isinstance(volume, dict) and "hostPath" in volume:
            yield f"{pod.path}.volumes[{i}].hostPath", "hostPath volumes"
    pod_sc = spec.get("securityContext") if isinstance(spec.get("securityContext"), dict) else {}
    if (pod_sc.get("seccompProfile") or {}).get("type") == "Unconfined":
        yield f"{pod.path}.securityContext.seccompProfile.type", "seccompProfile Unconfined"
    for path, container in pods.containers(pod, pods.ALL):
        sc = _security_context(container)
        if sc.get("privileged") is True:
            yield f"{path}.securityContext.privileged", "privileged"
        extra = sorted(set(_added(container)) - BASELINE_CAPABILITIES)
        if extra:
            yield f"{path}.securityContext.capabilities.add", f"capabilities {', '.join(extra)}"
        if sc.get("procMount") not in (None, "Default"):
            yield f"{path}.securityContext.procMount", f"procMount {sc['procMount']}"
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            yield f"{path}.securityContext.seccompProfile.type", "seccompProfile Unconfined"
        for j, port in enumerate(container.get("ports") or []):
            if isinstance(port, dict) and port.get("hostPort"):
                yield f"{path}.ports[{j}].hostPort", "hostPort"


def _restricted(pod: PodSpec) -> Iterator[tuple[str, str]]:
    spec = pod.spec
    pod_sc = spec.get("securityContext") if isinstance(spec.get("securityContext"), dict) else {}
    for i, volume in enumerate(spec.get("volumes") or []):
        if isinstance(volume, dict):
            kinds = set(volume) - {"name"}
            if kinds and not kinds <= RESTRICTED_VOLUMES and "hostPath" not in kinds:
                yield f"{pod.path}.volumes[{i}]", f"{', '.join(sorted(kinds - RESTRICTED_VOLUMES))} volumes"
    if pod_sc.get("runAsNonRoot") is False:
        yield f"{pod.path}.securityContext.runAsNonRoot", "runAsNonRoot=false"
    if pod_sc.get("runAsUser") == 0:
        yield f"{pod.path}.securityContext.runAsUser", "runAsUser=0"
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type") in ("RuntimeDefault", "Localhost")
    for path, container in pods.containers(pod, pods.ALL):
        sc = _security_context(container)
        if sc.get("allowPrivilegeEscalation") is not False:
            yield f"{path}.securityContext.allowPrivilegeEscalation", "allowPrivilegeEscalation must be false"
        if sc.get("runAsNonRoot") is False or (sc.get("runAsNonRoot") is None and pod_sc.get("runAsNonRoot") is not True):
            yield f"{path}.securityContext.runAsNonRoot", "runAsNonRoot must be true (pod or container)"
        if sc.get("runAsUser") == 0:
            yield f"{path}.securityContext.runAsUser", "runAsUser=0"
        seccomp = (sc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost") and not (seccomp is None and pod_seccomp):
            yield f"{path}.securityContext.seccompProfile.type", "seccompProfile must be RuntimeDefault or Localhost"
        caps = sc.get("capabilities") if isinstance(sc.get("capabilities"), dict) else {}
        if "ALL" not in (caps.get("drop") or []):
            yield f"{path}.securityContext.capabilities.drop", 'capabilities.drop must hold "ALL"'
        extra = sorted(set(_added(container)) - UNPRIVILEGED_CAPABILITIES)
        if extra:
            yield f"{path}.securityContext.capabilities.add", f"capabilities {', '.join(extra)}"


def pod_security(index: Index, rule: Rule) -> Iterator[Violation]:
    """Pods the enforce level of their namespace (a Namespace among the checked objects) refuses."""
    levels = {}
    for ns in index.of_kind("Namespace"):
        level = ns.labels.get(ENFORCE_LABEL)
        if level in LEVELS:
            levels[ns.name] = level
    for pod in index.pods():
        level = levels.get(pod.doc.namespace, "privileged")
        if level == "privileged":
            continue
        found = list(_baseline(pod))
        if level == "restricted":
            found += [f for f in _restricted(pod) if f[0] not in {p for p, _ in found}]
        for field, what in found:
            yield Violation(pod.doc, field, f"namespace {pod.doc.namespace} enforces {level}: {what}")


def image_pinned(index: Index, rule: Rule) -> Iterator[Violation]:
    for pod in index.pods():
        for path, container in pods.containers(pod, pods.ALL):
            image = container.get("image")
            if isinstance(image, str) and image and not ImageRef.parse(image).pinned:
                yield Violation(pod.doc, f"{path}.image", f"{image} has {'the tag latest' if ImageRef.parse(image).tag else 'no tag'}")


def secret_in_manifests(index: Index, rule: Rule) -> Iterator[Violation]:
    for doc in index.of_kind("Secret"):
        if doc.group != "":
            continue
        for key in ("data", "stringData"):
            if doc.obj.get(key):
                yield Violation(doc, key, f"{len(doc.obj[key]) if isinstance(doc.obj[key], dict) else 'some'} "
                                          "value(s) in the repository")


#: Verbs that grant more than the rule lists (RBAC escalation checks:
#: plugin/pkg/auth/authorizer/rbac/rbac.go and pkg/registry/rbac/escalation_check.go).
ESCALATION_VERBS = frozenset({"bind", "escalate", "impersonate"})


def _allowed_roles(index: Index, rule: Rule) -> set[str]:
    """The ClusterRoles the rule file's allow-list (``params.allowed``: upstream controllers that need
    wildcards or bind/escalate/impersonate, each with its reason and source) excepts, their
    ``${name}`` placeholders (a chart's fullname) filled from the configuration."""
    roles = set()
    for i, entry in enumerate((rule.params or {}).get("allowed", ())):
        if "clusterRole" in entry:
            try:
                roles.add(fill(entry["clusterRole"], index.ctx.values))
            except KeyError as unknown:
                raise InputError(rule.file, f"$.params.allowed[{i}].clusterRole",
                                 f"unknown placeholder ${{{unknown.args[0]}}} (known: {', '.join(sorted(index.ctx.values))})") from None
    return roles


def rbac_wildcards(index: Index, rule: Rule) -> Iterator[Violation]:
    allowed = _allowed_roles(index, rule)
    for doc in index.api_objects():
        if doc.group != "rbac.authorization.k8s.io":
            continue
        if doc.kind == "ClusterRole" and doc.name in allowed:
            continue
        rules = doc.obj.get("rules")
        for i, rbac_rule in enumerate(rules if isinstance(rules, list) else []):
            if not isinstance(rbac_rule, dict):
                continue
            verbs = {str(v) for v in rbac_rule.get("verbs") or []}
            resources = {str(r) for r in rbac_rule.get("resources") or []}
            if "*" in verbs:
                yield Violation(doc, f"rules[{i}].verbs", "verbs '*'")
            elif verbs & ESCALATION_VERBS:
                yield Violation(doc, f"rules[{i}].verbs", f"verbs {', '.join(sorted(verbs & ESCALATION_VERBS))}")
            if "*" in resources:
                yield Violation(doc, f"rules[{i}].resources", "resources '*'")

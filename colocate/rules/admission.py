"""ValidatingAdmissionPolicies from the rules that judge an object on its own (docs/admission.md).

A rule file's ``admission:`` key holds its CEL, next to its schema or check, so each rule has one
home. One of:

- ``pod``: CEL over ``spec``, each pod spec of the object (a Pod, a workload's template, each
  TFJob replica's template), true when the rule holds;
- ``container``: CEL over ``c``, each container and init container of those pod specs;
- ``object``: CEL over ``object`` itself (rules with ``kinds``);

with ``field``, the field the message names (below the pod spec, the container, or the object),
``kinds`` for an ``object`` rule whose file names none (its Python check picks them),
and optionally ``differs``: where admission cannot judge exactly as ``check`` does, and why.
``${name}`` placeholders are filled from colocate.yaml at synth time: the policies carry the
configuration's values as literals (priority class names, the Harbor host, the proxied
registries) instead of a paramKind object, so nothing else must exist for them to work.

Kubernetes 1.28 serves ValidatingAdmissionPolicy as ``admissionregistration.k8s.io/v1beta1``
behind the ValidatingAdmissionPolicy feature gate; new expressions are compiled with the 1.27
CEL library set (k8s.io/apiserver v0.28.15 pkg/cel/environment/base.go
DefaultCompatibilityVersion), so no ``quantity()`` and no optional types: every field is guarded
with ``has()``.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Iterable, Sequence

from colocate.rules.files import Rule, fill, placeholder_values
from colocate.model.names import GUARD_ANNOTATIONS, TIER_LABEL

API_VERSION = "admissionregistration.k8s.io/v1beta1"
#: The API server flags 1.28 needs (kubernetes v1.28.15 pkg/features/kube_features.go:
#: ValidatingAdmissionPolicy is beta, off by default; its API group version is off by default).
FEATURE_GATE = "ValidatingAdmissionPolicy=true"
RUNTIME_CONFIG = "admissionregistration.k8s.io/v1beta1=true"
API_SERVER_FLAGS = {"feature-gates": FEATURE_GATE, "runtime-config": RUNTIME_CONFIG}
#: kube-controller-manager starts the controller that type-checks each policy against the kinds it
#: matches (status.typeChecking) only with the gate (kubernetes v1.28.15
#: cmd/kube-controller-manager/app/controllermanager.go); enforcement does not need it.
CONTROLLER_MANAGER_FLAGS = {"feature-gates": FEATURE_GATE}
NAME_PREFIX = "colocate-"
#: Label on every generated policy and binding: the rule it enforces (the simulation's report
#: and the tests read it).
RULE_LABEL = "colocate.io/rule"
#: Namespaces no policy judges: kubeadm's static pods and the cluster add-ons the provisioner
#: installs there are not colocate's, and a denied kube-system pod can take the cluster down.
EXEMPT_NAMESPACES = ("kube-system",)
#: What a binding does with an error rule's failure: refuse the object. A rollout starts with
#: ROLLOUT_ACTIONS (admission.validationActions in colocate.yaml; docs/admission.md, "Rollout").
DENY = ("Deny",)
ROLLOUT_ACTIONS = ("Warn", "Audit")
#: ``admission.namespaces`` of a rule: ``tiers``, judged in the namespaces labelled with a tier
#: only; ``all``, in every namespace but kube-system (a rule about where an object may be, such
#: as the online priority); unset, in every namespace but the platform's (platform_namespaces()).
TIER_ROLES = ("online", "offline")

#: (apiGroup, version, resource, kind, pod spec path) of every kind whose objects hold one pod spec.
WORKLOADS = (
    ("", "v1", "pods", "Pod", "spec"),
    ("", "v1", "replicationcontrollers", "ReplicationController", "spec.template.spec"),
    ("apps", "v1", "deployments", "Deployment", "spec.template.spec"),
    ("apps", "v1", "statefulsets", "StatefulSet", "spec.template.spec"),
    ("apps", "v1", "daemonsets", "DaemonSet", "spec.template.spec"),
    ("apps", "v1", "replicasets", "ReplicaSet", "spec.template.spec"),
    ("batch", "v1", "jobs", "Job", "spec.template.spec"),
    ("batch", "v1", "cronjobs", "CronJob", "spec.jobTemplate.spec.template.spec"),
)
#: Custom resources the rules name in ``kinds``: (apiGroup, version, resource).
CUSTOM_KINDS = {"TFJob": ("kubeflow.org", "v1", "tfjobs")}


def enforced(rules: Iterable[Rule]) -> list[Rule]:
    """The rules admission enforces: those with an ``admission:`` key."""
    return [r for r in rules if r.admission]


def policy_name(rule: Rule) -> str:
    """The policy's and its binding's name: ``colocate-col004-offline-priority``."""
    return f"{NAME_PREFIX}{rule.id.lower()}-{rule.name}"


def kinds_of(rule: Rule) -> tuple[str, ...]:
    """The kinds an ``object`` rule judges: the rule's ``kinds``, else its ``admission.kinds``
    (a Python check that picks its kinds itself)."""
    return tuple(rule.kinds) or tuple((rule.admission or {}).get("kinds", ()))


def _literal(text: str) -> str:
    """A CEL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _has_chain(base: str, path: str) -> str:
    """``has(a.b) && has(a.b.c)`` for ``base`` = a, ``path`` = b.c."""
    parts, out, current = path.split("."), [], base
    for part in parts:
        current = f"{current}.{part}"
        out.append(f"has({current})")
    return " && ".join(out)


def _pods(obj: str = "object") -> str:
    """CEL: the object's pod specs as ``{'path': ..., 'spec': ...}`` maps. Written out in each
    expression rather than as a policy variable, and over ``dyn(object)``: 1.28's type checker
    (status.typeChecking) knows no ``variables`` and would check each kind's branch against every
    other kind's schema, filling the status with false warnings."""
    tf = f"dyn({obj}).spec.tfReplicaSpecs"
    branches = [f"{obj}.kind == 'TFJob' ? (has({tf}) ? {tf}.filter(r, has({tf}[r].template) && "
                f"has({tf}[r].template.spec)).map(r, {{'path': dyn('spec.tfReplicaSpecs.' + r + '.template.spec'), "
                f"'spec': dyn({tf}[r].template.spec)}}) : [])"]
    for _, _, _, kind, path in WORKLOADS:
        guard = _has_chain(f"dyn({obj})", path)
        branches.append(f"{obj}.kind == '{kind}' ? ({guard} ? [{{'path': dyn('{path}'), "
                        f"'spec': dyn(dyn({obj}).{path})}}] : [])")
    return "(" + " : ".join(branches) + " : [])"


def _container_lists(rule: Rule) -> tuple[str, ...]:
    """The container lists a ``container`` rule judges: ephemeral containers too where the rule
    says so (``ephemeral: true``; they carry no resources, so a resource rule leaves them out)."""
    return ("containers", "initContainers", *(("ephemeralContainers",) if rule.admission.get("ephemeral") else ()))


def _pod_ok(rule: Rule, spec: str) -> str:
    """CEL: the rule holds for the pod spec ``spec`` (an expression)."""
    adm = rule.admission
    if "pod" in adm:
        return f"[{spec}].all(spec, {adm['pod']})"
    each = adm["container"]
    return f"[{spec}].all(spec, " + " && ".join(f"(!has(spec.{key}) || spec.{key}.all(c, {each}))"
                                                for key in _container_lists(rule)) + ")"


def _bad_containers(rule: Rule, key: str) -> str:
    """CEL: ``['<key>[a,b]']`` for the containers of list ``key`` of pod spec ``p.spec`` that break
    the rule, or ``[]``."""
    bad = f"(has(p.spec.{key}) ? p.spec.{key}.filter(c, !({rule.admission['container']})).map(c, c.name) : [])"
    return f"(size({bad}) > 0 ? ['{key}[' + {bad}.join(',') + ']'] : [])"


def _where(rule: Rule) -> str:
    """CEL: the offending field(s), as check names them (containers by name)."""
    adm = rule.admission
    if "object" in adm:
        return _literal(adm["field"])
    failing = _pods() + ".filter(p, !(" + _pod_ok(rule, "p.spec") + "))"
    if "pod" in adm:
        return failing + ".map(p, p.path + " + _literal("." + adm["field"]) + ").join(', ')"
    bad = " + ".join(_bad_containers(rule, key) for key in ("initContainers", "containers", *_container_lists(rule)[2:]))
    return (failing + ".map(p, (" + bad
            + ").map(x, p.path + '.' + x + " + _literal("." + adm["field"]) + ").join(', ')).join(', ')")


def _namespace_selector(rule: Rule, platform: Sequence[str]) -> dict:
    """A tier rule's namespaces by their tier label; a rule for the tiers' pods (``namespaces:
    tiers``) those labelled with a tier; ``namespaces: all`` every one but kube-system; every other
    rule all but the platform's, whose add-ons come from their own registries and predate the rules."""
    if rule.target == "PodSpec" and rule.scope in TIER_ROLES:
        return {"matchLabels": {TIER_LABEL: rule.scope}}
    scope = rule.admission.get("namespaces")
    if scope == "tiers":
        return {"matchExpressions": [{"key": TIER_LABEL, "operator": "In", "values": list(TIER_ROLES)}]}
    exempt = EXEMPT_NAMESPACES if scope == "all" else sorted({*EXEMPT_NAMESPACES, *platform})
    return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(exempt)}]}


def _judges_ephemeral(rule: Rule) -> bool:
    """The rule reads ephemeral containers: ``kubectl debug`` adds them through the Pod's
    ``ephemeralcontainers`` subresource, which a rule on ``pods`` alone never sees."""
    return bool(rule.admission.get("ephemeral")) or "ephemeralContainers" in rule.admission.get("pod", "")


def _resource_rules(rule: Rule) -> list[dict]:
    groups: dict[tuple[str, str], list[str]] = {}
    if "object" not in rule.admission:  # every kind with a pod spec
        for group, version, resource, _, _ in WORKLOADS:
            groups.setdefault((group, version), []).append(resource)
        for group, version, resource in CUSTOM_KINDS.values():
            groups.setdefault((group, version), []).append(resource)
    for kind in kinds_of(rule):
        group, version, resource = CUSTOM_KINDS[kind]
        if resource not in groups.get((group, version), []):
            groups.setdefault((group, version), []).append(resource)
    out = [{"apiGroups": [group], "apiVersions": [version], "resources": resources,
            "operations": ["CREATE", "UPDATE"]} for (group, version), resources in sorted(groups.items())]
    if "object" not in rule.admission and _judges_ephemeral(rule):
        out.append({"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/ephemeralcontainers"],
                    "operations": ["UPDATE"]})
    return out


def _on_old_object(expression: str) -> str:
    """An ``object`` rule's CEL over the object before the update."""
    return re.sub(r"\bobject\b", "oldObject", expression)


def _expression(rule: Rule) -> str:
    """The policy's validation. An UPDATE that leaves what the rule reads as it was is admitted:
    a controller's write to an object that predates the rule (a ReplicaSet scaled, a finalizer
    removed, a TFJob paused, evidence annotated) is no new breach. For pod and container rules,
    the object's pod specs are unchanged; for object rules, the old object broke the rule too."""
    adm = rule.admission
    if "object" in adm:
        return f"(request.operation == 'UPDATE' && !({_on_old_object(adm['object'])})) || ({adm['object']})"
    return (f"(request.operation == 'UPDATE' && {_pods('oldObject')} == {_pods()}) || "
            + _pods() + ".all(p, " + _pod_ok(rule, "p.spec") + ")")


def policy(rule: Rule, values: dict[str, str], platform: Sequence[str] = (),
           error_actions: Sequence[str] = DENY) -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding for one rule (``values`` fill the placeholders;
    ``platform`` names the platform's namespaces; ``error_actions`` is what an error rule's binding does)."""
    rule = rule.filled(values)
    rule = replace(rule, admission=fill(rule.admission, values))
    adm = rule.admission
    name = policy_name(rule)
    labels = {RULE_LABEL: rule.id}
    # Delete=false: deleting the platform Application must not turn admission off (rule COL307).
    metadata = {"name": name, "labels": labels, "annotations": dict(GUARD_ANNOTATIONS)}
    head = f"{rule.id} {rule.name}: "
    tail = f" (fix: {rule.fix})"
    expression = _expression(rule)
    # dyn(object).metadata: 1.28's type checker knows only some metadata fields (no namespace).
    message_expression = (_literal(head) + " + object.kind + ' ' + (has(dyn(object).metadata.namespace) ? "
                          "dyn(object).metadata.namespace + '/' : '') + (has(dyn(object).metadata.name) ? "
                          "dyn(object).metadata.name : "
                          "'(generated name)') + ' field ' + " + _where(rule) + " + ': ' + "
                          + _literal(rule.message + tail))
    spec: dict[str, Any] = {
        # Fail: an expression that cannot be evaluated refuses the object instead of letting an
        # unjudged one in; the policies run in the API server (no webhook to be down), and
        # kube-system is never matched (docs/admission.md, "failurePolicy").
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": _resource_rules(rule),
                             "namespaceSelector": _namespace_selector(rule, platform)},
        "validations": [{"expression": expression, "messageExpression": message_expression,
                         "message": f"{head}{rule.message} (field {adm['field']}){tail}", "reason": "Forbidden"}],
    }
    actions = list(error_actions) if rule.severity == "error" else list(ROLLOUT_ACTIONS)
    return [
        {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy",
         "metadata": metadata, "spec": spec},
        {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {**metadata, "labels": dict(labels), "annotations": dict(GUARD_ANNOTATIONS)},
         "spec": {"policyName": name, "validationActions": actions}},
    ]


def policies(rules: Iterable[Rule], values: dict[str, str], platform: Sequence[str] = (),
             error_actions: Sequence[str] = DENY) -> list[dict[str, Any]]:
    """Every enforced rule's policy and binding, ordered by rule id."""
    return [obj for rule in sorted(enforced(rules), key=lambda r: r.id)
            for obj in policy(rule, values, platform, error_actions)]


def platform_namespaces(cluster, config) -> list[str]:
    """The namespaces of the platform's own add-ons, which the rules for workloads do not judge at
    admission: Argo CD (its dex is ghcr.io's), monitoring, the operators, colocate's control."""
    queue = [cluster.kueue_namespace] if config.queue else []
    return sorted({*EXEMPT_NAMESPACES, config.gitops.argocd_namespace, cluster.monitoring_namespace,
                   cluster.kubeflow_namespace, cluster.control_namespace, *queue})


def values(cluster, config) -> dict[str, str]:
    """The placeholders' values from colocate.yaml and the cluster, as check fills them, plus
    the proxied registries as a CEL list body."""
    proxied = sorted(config.registry_proxy_projects)
    keys = sorted({k for pool in cluster.pools for k in pool.node_labels})
    gpu_labels = sorted({f"{k}={v}" for pool in cluster.pools if pool.gpus for k, v in pool.node_labels.items()})
    return {**placeholder_values(cluster, config.registry_host, proxied),
            "proxied_registries_cel": ", ".join(_literal(r) for r in proxied),
            # COL070: a nodeSelector on one of these keys with a pair no GPU pool's nodes carry
            # keeps the pod off every GPU pool.
            "pool_label_keys_cel": ", ".join(_literal(k) for k in keys),
            "gpu_pool_labels_cel": ", ".join(_literal(x) for x in gpu_labels)}

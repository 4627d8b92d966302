"""Python checks for rules a JSON Schema cannot express: comparisons between fields, and
joins over the whole object set. Each takes the Index and its Rule and yields Violations;
the rule's metadata, message and fix live in policies/rules/<id>.yaml.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import PurePath
from typing import Iterator

from colocate.model import quantity
from colocate.checker import Index, Rule, Violation
from colocate.model.scheduling import ImageRef, reference_error
from colocate.model.names import BUILTIN_PRIORITY_CLASSES, KUBEFLOW_REPLICA_SPECS, MAX_USER_PRIORITY, MIN_GAP_FACTOR, TIER_LABEL
from colocate.model.tiers import ROLE_RANK, TierClass, inversions
from colocate.model.pods import ALL, containers


def _tier_role(index: Index, doc) -> str:
    """The tier a checked PriorityClass serves: the role of the configured tier of that name (the
    configuration is the source of truth; COL015 reports a label that says otherwise), else its
    colocate.io/tier label; "" for any other class."""
    configured = next((t.role for t in index.ctx.cluster.tiers if t.name == doc.name), "")
    label = doc.labels.get(TIER_LABEL)
    return configured or (label if isinstance(label, str) else "")


def _tier_classes(index: Index) -> list[tuple[TierClass, object]]:
    """The checked PriorityClasses that serve a tier, as written, with their documents."""
    out = []
    for doc in index.of_kind("PriorityClass"):
        value = doc.obj.get("value")
        role = _tier_role(index, doc)
        if isinstance(value, int) and not isinstance(value, bool) and role:
            out.append((TierClass(doc.name, role, value), doc))
    return out


def tier_order(index: Index, rule: Rule) -> Iterator[Violation]:
    """The checked PriorityClasses keep the tiers in order: online above offline above background."""
    classes = _tier_classes(index)
    docs = {id(c): d for c, d in classes}
    for upper, lower in inversions([c for c, _ in classes]):
        yield Violation(docs[id(lower)], "value", f"{lower.name}={lower.value} ({lower.role} tier) is not below "
                        f"{upper.name}={upper.value} ({upper.role} tier)")


def priority_gap(index: Index, rule: Rule) -> Iterator[Violation]:
    """Adjacent user PriorityClasses must be MIN_GAP_FACTOR apart (system classes excluded). Two
    tier classes in the wrong order are COL011's: one finding per fault."""
    classes = sorted((d for d in index.of_kind("PriorityClass")
                      if isinstance(d.obj.get("value"), int) and d.obj["value"] <= MAX_USER_PRIORITY),
                     key=lambda d: -d.obj["value"])
    for higher, lower in zip(classes, classes[1:]):
        if ROLE_RANK.get(_tier_role(index, lower), -1) > ROLE_RANK.get(_tier_role(index, higher), 3):
            continue
        if higher.obj["value"] < MIN_GAP_FACTOR * lower.obj["value"]:
            yield Violation(lower, "value", f"{lower.name}={lower.obj['value']} is only "
                            f"{higher.obj['value'] / max(lower.obj['value'], 1):.1f}x below {higher.name}={higher.obj['value']}; "
                            f"set it to at most {higher.obj['value'] // MIN_GAP_FACTOR}")


def _resources(container: dict, kind: str) -> dict:
    return ((container.get("resources") or {}).get(kind)) or {}


def online_guaranteed(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every container of an online pod sets CPU and memory requests equal to limits."""
    for pod in index.pods("online"):
        for path, container in containers(pod):
            requests, limits = _resources(container, "requests"), _resources(container, "limits")
            for resource in ("cpu", "memory"):
                request, limit = requests.get(resource), limits.get(resource)
                if limit is None:
                    yield Violation(pod.doc, f"{path}.resources.limits.{resource}", "not set")
                elif request is not None and quantity.parse(request) != quantity.parse(limit):
                    yield Violation(pod.doc, f"{path}.resources.requests.{resource}",
                                    f"request {request} != limit {limit}")


def online_integer_cpu(index: Index, rule: Rule) -> Iterator[Violation]:
    """Online pods that can land on a static-CPU-manager pool need whole-core CPU."""
    for pod in index.pods("online"):
        static = [p.name for p in index.ctx.pools if p.static_cpu and p.admits(pod.spec)]
        if not static:
            continue
        for path, container in containers(pod):
            for kind in ("requests", "limits"):
                cpu = _resources(container, kind).get("cpu")
                if cpu is not None and quantity.is_quantity(cpu) and quantity.millicores(cpu) % 1000:
                    yield Violation(pod.doc, f"{path}.resources.{kind}.cpu",
                                    f"{cpu} on pool {', '.join(static)}")


def duplicate_objects(index: Index, rule: Rule) -> Iterator[Violation]:
    """The same group/kind/namespace/name defined more than once. An object with generateName
    and no name gets a fresh name each time it is created, so it never collides."""
    seen: dict[tuple, list] = defaultdict(list)
    destinations = _destination_namespaces(index)
    for doc in index.api_objects():
        if not doc.name and doc.metadata.get("generateName"):
            continue
        namespace = doc.namespace
        if not namespace and doc.namespaced:
            # No namespace of its own: the Application syncing its folder gives it one (Argo CD's
            # spec.destination.namespace), so two such objects in separate folders, as two
            # Applications sync them, need not collide. Known destinations are compared.
            folder = PurePath(doc.file).parent.as_posix()
            namespace = next((ns for path, ns in destinations if folder == path or folder.endswith("/" + path)),
                             f"(the destination of {folder}/)")
        seen[(doc.group, doc.kind, namespace, doc.name)].append(doc)
    for docs in seen.values():
        for duplicate in docs[1:]:
            yield Violation(duplicate, "metadata.name", f"also defined in {docs[0].file}:{docs[0].line}")


def _destination_namespaces(index: Index) -> list[tuple[str, str]]:
    """(source path, destination namespace) of the checked Applications that set both."""
    out = []
    for app in index.of_kind("Application"):
        spec = app.obj.get("spec") or {}
        namespace = (spec.get("destination") or {}).get("namespace")
        sources = [spec["source"]] if isinstance(spec.get("source"), dict) else []
        sources += [s for s in spec.get("sources") or [] if isinstance(s, dict)]
        for source in sources:
            if source.get("path") and isinstance(namespace, str) and namespace:
                out.append((PurePath(str(source["path"]).strip("/")).as_posix(), namespace))
    return out


def namespaced_without_namespace(index: Index, rule: Rule) -> Iterator[Violation]:
    """Namespaced objects must say where they go."""
    for doc in index.api_objects():
        if doc.namespaced and not doc.namespace:
            yield Violation(doc, "metadata.namespace")


def pod_priority(index: Index, rule: Rule) -> Iterator[Violation]:
    """Pods outside the offline namespaces have a class above the offline tier (the pre-pull
    namespace excepted). Offline namespaces and TFJobs are COL004's and COL102's, the other Kubeflow
    training kinds COL118's: one finding per fault."""
    cluster = index.ctx.cluster
    values = dict(BUILTIN_PRIORITY_CLASSES)
    values.update({t.name: t.value for t in cluster.tiers})
    values.update({d.name: d.obj["value"] for d in index.of_kind("PriorityClass") if isinstance(d.obj.get("value"), int)})
    # The offline class as checked (by its tier label, else the configured name), else the model's.
    model = cluster.tier("offline")
    offline = next((c for c, _ in _tier_classes(index) if c.role == "offline" and c.name == model.name),
                   next((c for c, _ in _tier_classes(index) if c.role == "offline"), model))
    low_allowed = index.ctx.offline_namespaces | {cluster.prepull_namespace}
    for pod in index.pods():
        if pod.doc.namespace in index.ctx.offline_namespaces or pod.doc.kind in KUBEFLOW_REPLICA_SPECS:
            continue
        name = pod.spec.get("priorityClassName")
        field = f"{pod.path}.priorityClassName"
        if not name:
            yield Violation(pod.doc, field, f"not set: the pod runs at priority 0, below {offline.name}")
        elif pod.doc.namespace not in low_allowed and values.get(name, offline.value + 1) <= offline.value:
            yield Violation(pod.doc, field, f"{name} ({values[name]}) is not above {offline.name} ({offline.value})")


def online_priority_reserved(index: Index, rule: Rule) -> Iterator[Violation]:
    """Only pods of an online namespace run at the online tier's class; an offline namespace's
    pods are COL004's (one finding per fault)."""
    online = index.ctx.cluster.tier("online").name
    for pod in index.pods():
        if pod.spec.get("priorityClassName") == online and index.ctx.scope_of(pod) == "other":
            yield Violation(pod.doc, f"{pod.path}.priorityClassName",
                            f"{online} in namespace {pod.doc.namespace!r}, which is not an online namespace")


def platform_requests(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every running container of a platform pod (not in an online or offline namespace, not the
    training-image pre-pull's) requests CPU and memory, or sets limits the API server copies
    into requests."""
    skip = index.ctx.offline_namespaces | index.ctx.online_namespaces | {index.ctx.cluster.prepull_namespace}
    for pod in index.pods():
        if pod.doc.namespace in skip or pod.doc.kind in KUBEFLOW_REPLICA_SPECS:
            continue
        for path, container in containers(pod, ("containers",)):
            resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
            given = {key for part in ("requests", "limits") if isinstance(resources.get(part), dict)
                     for key in resources[part]}
            missing = [r for r in ("cpu", "memory") if r not in given]
            if missing:
                yield Violation(pod.doc, f"{path}.resources.requests", f"container {container.get('name')!r} requests "
                                f"no {' and no '.join(missing)}")


def image_from_mirror(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every container image comes from Harbor or from a registry the nodes redirect to one of
    Harbor's proxy-cache projects; the nodes reach no other registry."""
    ctx = index.ctx
    if not ctx.registry_host:
        return
    for pod in index.pods():
        for path, container in containers(pod, ALL):
            image = container.get("image")
            if not isinstance(image, str) or not image:
                continue
            host = ImageRef.parse(image).host
            if host != ctx.registry_host and host not in ctx.proxied_registries:
                yield Violation(pod.doc, f"{path}.image", f"{image} is pulled from {host}")


def image_reference(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every container image is a reference the kubelet can parse (model/scheduling.py's grammar)."""
    for pod in index.pods():
        for path, container in containers(pod, ALL):
            image = container.get("image")
            if isinstance(image, str) and image:
                why = reference_error(image)
                if why:
                    yield Violation(pod.doc, f"{path}.image", why)


def offline_no_preemption(index: Index, rule: Rule) -> Iterator[Violation]:
    """An offline-tier PriorityClass that lets training preempt: on the untainted mixed pool the
    only pods below it are add-ons without a class (priority 0) and the image pre-pull."""
    for doc in index.of_kind("PriorityClass"):
        if _tier_role(index, doc) != "offline":
            continue
        policy = doc.obj.get("preemptionPolicy")
        if policy != "Never":
            yield Violation(doc, "preemptionPolicy", f"{policy or 'unset (PreemptLowerPriority)'}")


def tier_classes_kept(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every tier's PriorityClass is in each checked colocate dist/ (the folder of a DistIndex):
    Argo CD prunes what dist/ no longer holds."""
    classes = [(PurePath(d.file), d.name) for d in index.of_kind("PriorityClass") if d.group == "scheduling.k8s.io"]
    for dist_index in index.of_kind("DistIndex"):
        root = PurePath(dist_index.file).parent
        held = {name for file, name in classes if root in file.parents}
        for tier in index.ctx.cluster.tiers:
            if tier.name not in held:
                yield Violation(dist_index, "folders", f"PriorityClass {tier.name} ({tier.role} tier) is not in {root}: "
                                "Argo CD prunes it, and the Priority admission plugin then refuses every new pod naming it")


#: What the API server stores for a PriorityClass without preemptionPolicy (kubernetes v1.28.15
#: pkg/apis/scheduling/v1/defaults.go SetDefaults_PriorityClass).
DEFAULT_PREEMPTION = "PreemptLowerPriority"


def tiers_follow_configuration(index: Index, rule: Rule) -> Iterator[Violation]:
    """The configuration says which namespace and which PriorityClass serve which tier; a checked
    object that says otherwise (its colocate.io/tier label, a tier class's value or
    preemptionPolicy) is an error naming both. The configured tier namespaces carry their label:
    the admission policies select namespaces by it."""
    cluster = index.ctx.cluster
    namespaces = {cluster.online_namespace: "online", cluster.training_namespace: "offline"}
    for doc in index.of_kind("Namespace"):
        tier = namespaces.get(doc.name)
        label = doc.labels.get(TIER_LABEL)
        if tier and label != tier and (label is None or label in ROLE_RANK):  # an unknown value is COL016's
            said = f"labelled {TIER_LABEL}: {label}" if label is not None else f"without the {TIER_LABEL} label"
            yield Violation(doc, f"metadata.labels.{TIER_LABEL}", f"Namespace {doc.name} is the configuration's {tier} "
                            f"namespace but is {said}")
    tiers = {t.name: t for t in cluster.tiers}
    for doc in index.of_kind("PriorityClass"):
        tier = tiers.get(doc.name)
        if tier is None or doc.group != "scheduling.k8s.io":
            continue
        label = doc.labels.get(TIER_LABEL)
        if label in ROLE_RANK and label != tier.role:
            yield Violation(doc, f"metadata.labels.{TIER_LABEL}", f"PriorityClass {doc.name} is the configuration's "
                            f"{tier.role} tier but is labelled {TIER_LABEL}: {label}")
        value = doc.obj.get("value")
        if value != tier.value or isinstance(value, bool):
            yield Violation(doc, "value", f"PriorityClass {doc.name} has value {value}; the configuration's "
                            f"{tier.role} tier has {tier.value}")
        policy = doc.obj.get("preemptionPolicy", DEFAULT_PREEMPTION)
        if tier.role == "offline" and policy != "Never":
            continue  # COL012's finding: one per fault
        if policy != tier.preemption_policy:
            shown = policy if "preemptionPolicy" in doc.obj else f"unset ({DEFAULT_PREEMPTION})"
            yield Violation(doc, "preemptionPolicy", f"PriorityClass {doc.name} has preemptionPolicy {shown}; the "
                            f"configuration's {tier.role} tier has {tier.preemption_policy}")

"""GitOps checks: what Argo CD would delete, and what it must not."""
from __future__ import annotations

from pathlib import PurePath
from typing import Any, Iterator

from colocate.checker import Index, Rule, Violation, reads
from colocate.model.names import (COMPARE_OPTIONS, IGNORE_EXTRANEOUS, KEEP_ON_DELETE, KEEP_ON_PRUNE, SERVER_SIDE_APPLY,
                                  SKIP_DRY_RUN, SYNC_OPTIONS, sync_options)

#: Kinds whose deletion deletes data: a namespace's contents, a claim's volume, a CRD's resources.
STATEFUL_KINDS = ("Namespace", "PersistentVolumeClaim", "CustomResourceDefinition")


def deletion_protection(index: Index, rule: Rule) -> Iterator[Violation]:
    """Stateful objects without both Prune=false and Delete=false; any object kept on prune
    (Prune=false) without the compare option IgnoreExtraneous."""
    for doc in index.api_objects():
        options = sync_options(doc.metadata)
        if doc.kind in STATEFUL_KINDS:
            missing = [o for o in (KEEP_ON_PRUNE, KEEP_ON_DELETE) if o not in options]
            if missing:
                yield Violation(doc, f"metadata.annotations[{SYNC_OPTIONS}]", f"missing {', '.join(missing)}")
        if (KEEP_ON_PRUNE in options or doc.kind in STATEFUL_KINDS) \
                and IGNORE_EXTRANEOUS not in sync_options(doc.metadata, COMPARE_OPTIONS):
            yield Violation(doc, f"metadata.annotations[{COMPARE_OPTIONS}]", f"missing {IGNORE_EXTRANEOUS}: once its "
                            "file is gone Argo CD keeps it (Prune=false) and the Application stays OutOfSync, "
                            "re-synced at every self-heal timeout")


def guard_protection(index: Index, rule: Rule) -> Iterator[Violation]:
    """PriorityClasses, ResourceQuotas, LimitRanges, NetworkPolicies and admission policies and
    bindings (COL307's kinds: whose loss fails open or refuses pods, docs/gitops.md "Deletion
    protection") without Delete=false."""
    for doc in index.api_objects():
        if KEEP_ON_DELETE not in sync_options(doc.metadata):
            yield Violation(doc, f"metadata.annotations[{SYNC_OPTIONS}]", f"missing {KEEP_ON_DELETE}")


#: Application fields and the Argo CD release that introduced them; an older release drops them
#: silently (the chart then runs with its defaults). Read from argoproj/argo-cd
#: pkg/apis/application/v1alpha1/types.go at v2.6.0 ... v2.10.0 (docs/gitops.md).
SOURCES_SINCE = (2, 6)
SOURCE_FIELDS = {
    ("helm", "valuesObject"): (2, 8),
    ("kustomize", "patches"): (2, 9),
    ("kustomize", "components"): (2, 10),
}


def _sources(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(spec.get("source"), dict):
        yield "spec.source", spec["source"]
    for i, source in enumerate(spec.get("sources") or []):
        if isinstance(source, dict):
            yield f"spec.sources[{i}]", source


def argocd_field_version(index: Index, rule: Rule) -> Iterator[Violation]:
    """Application fields newer than the oldest Argo CD that syncs the repository."""
    oldest = index.ctx.min_argocd_version
    for doc in index.of_kind("Application"):
        spec = doc.obj.get("spec") if doc.group == "argoproj.io" else None
        if not isinstance(spec, dict):
            continue
        found = [("spec.sources", SOURCES_SINCE)] if spec.get("sources") else []
        for path, source in _sources(spec):
            for (section, name), since in SOURCE_FIELDS.items():
                if (source.get(section) or {}).get(name) is not None:
                    found.append((f"{path}.{section}.{name}", since))
        for field, since in found:
            if since > oldest:
                yield Violation(doc, field, f"needs Argo CD {since[0]}.{since[1]}, minArgoCDVersion is "
                                            f"{oldest[0]}.{oldest[1]}")


#: API groups the API server serves itself (Kubernetes 1.28), and the group Argo CD installs
#: with itself: their kinds exist before any sync.
BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "policy", "autoscaling", "rbac.authorization.k8s.io", "networking.k8s.io",
    "scheduling.k8s.io", "storage.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io",
    "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io", "certificates.k8s.io", "events.k8s.io",
    "flowcontrol.apiserver.k8s.io", "apiregistration.k8s.io", "resource.k8s.io",
})
INSTALLED_WITH_ARGOCD = frozenset({"argoproj.io"})
#: metadata.annotations holds at most 256 KiB in total (apimachinery objectmeta.go
#: TotalAnnotationSizeLimitB); client-side apply copies the whole object into one of them.
ANNOTATIONS_LIMIT = 256 * 1024


def _crds(index: Index) -> dict[tuple[str, str], list[str]]:
    """(group, kind) -> folders of the CustomResourceDefinitions in the checked files."""
    out: dict[tuple[str, str], list[str]] = {}
    for crd in index.of_kind("CustomResourceDefinition"):
        spec = crd.obj.get("spec") or {}
        key = (spec.get("group", ""), (spec.get("names") or {}).get("kind", ""))
        out.setdefault(key, []).append(str(PurePath(crd.file).parent))
    return out


def _custom_resource(doc) -> bool:
    return doc.is_api_object and doc.group not in BUILTIN_GROUPS and doc.group not in INSTALLED_WITH_ARGOCD


@reads(whole=_custom_resource)
def custom_resource_before_crd(index: Index, rule: Rule) -> Iterator[Violation]:
    """A custom resource whose CRD is not applied in the same sync, without SkipDryRunOnMissingResource.
    Judged only on a GitOps tree (Argo CD Applications among the checked files), whose first sync
    creates the CRDs; once they exist, a manifest added later passes the dry run."""
    if not index.of_kind("Application"):
        return
    crds = _crds(index)
    for doc in index.api_objects():
        if doc.group in BUILTIN_GROUPS or doc.group in INSTALLED_WITH_ARGOCD:
            continue
        if SKIP_DRY_RUN in sync_options(doc.metadata):
            continue
        if str(PurePath(doc.file).parent) in crds.get((doc.group, doc.kind), ()):
            continue
        yield Violation(doc, f"metadata.annotations[{SYNC_OPTIONS}]", f"{doc.kind}.{doc.group}'s CRD is not in the "
                        "same Application, so the first sync's dry run fails while the CRD does not exist yet")


def _server_side(app) -> bool:
    """The Application syncs with ServerSideApply=true."""
    spec = app.obj.get("spec") or {}
    return SERVER_SIDE_APPLY in ((spec.get("syncPolicy") or {}).get("syncOptions") or [])


def _application_paths(index: Index) -> list[tuple[str, bool]]:
    """(source path, ServerSideApply set on the Application) of every Application checked."""
    out = []
    for app in index.of_kind("Application"):
        for _, source in _sources(app.obj.get("spec") or {}):
            if source.get("path"):
                out.append((str(source["path"]).strip("/"), _server_side(app)))
    return out


def _too_big_for_annotation(doc) -> bool:
    return doc.is_api_object and doc.json_size > ANNOTATIONS_LIMIT


@reads(whole=_too_big_for_annotation)
def too_big_for_client_side_apply(index: Index, rule: Rule) -> Iterator[Violation]:
    """Objects whose JSON does not fit the last-applied annotation, synced without server-side apply."""
    apps = _application_paths(index)
    trees = _tree_names(index)
    server_side = {folder.as_posix() for path, ssa in apps if ssa for _, folder in _checked_folders(trees, path)}
    for doc in index.api_objects():
        size = doc.json_size
        if size <= ANNOTATIONS_LIMIT or SERVER_SIDE_APPLY in sync_options(doc.metadata):
            continue
        folder = PurePath(doc.file).parent.as_posix()
        if folder in server_side:
            continue
        if any(ssa and (folder == path or folder.endswith("/" + path)) for path, ssa in apps):
            continue
        yield Violation(doc, f"metadata.annotations[{SYNC_OPTIONS}]", f"the object is {size} bytes of JSON; client-side "
                        f"apply stores all of it in an annotation, and annotations hold at most {ANNOTATIONS_LIMIT} bytes")


def _directory_sources(index: Index) -> list[tuple[Any, str, str, bool]]:
    """(Application doc, repo@revision, path, recurse) of every plain-directory source."""
    out = []
    for app in index.of_kind("Application"):
        for _, source in _sources(app.obj.get("spec") or {}):
            if source.get("path") and not (source.get("chart") or source.get("helm") or source.get("kustomize")):
                repo = f"{source.get('repoURL', '')}@{source.get('targetRevision', 'HEAD')}"
                recurse = bool((source.get("directory") or {}).get("recurse"))
                out.append((app, repo, PurePath(str(source["path"]).strip("/")).as_posix(), recurse))
    return out


def application_overlap(index: Index, rule: Rule) -> Iterator[Violation]:
    """Two Applications that sync the same folder, or one recursing into the other's folder: every
    object there has two owners, which prune each other's resources and fight over sync."""
    sources = _directory_sources(index)
    for i, (app, repo, path, _) in enumerate(sources):
        for other, other_repo, other_path, recurse in sources[:i] + sources[i + 1:]:
            if other is app or other_repo != repo:
                continue
            inside = path == other_path or (recurse and (other_path in ("", ".") or path.startswith(other_path + "/")))
            if inside:
                yield Violation(app, "spec.source.path", f"{path} is also synced by Application {other.name} "
                                f"({other_path}{', recursively' if recurse and path != other_path else ''})")


def _tree_names(index: Index) -> dict[PurePath, set[str]]:
    """Each checked dist/ (its DistIndex's folder) -> the names Applications' paths give it: the
    folder's own, and the repository's (``dist``), learned from an Application whose path ends in a
    folder the index says it syncs; a copy or ``synth --outdir`` names the tree otherwise."""
    paths: dict[str, list[str]] = {}
    for app, _, path, _ in _directory_sources(index):
        paths.setdefault(app.name, []).append(path)
    out = {}
    for dist_index in index.of_kind("DistIndex"):
        root = PurePath(dist_index.file).parent
        names = out.setdefault(root, {root.name})
        folders = dist_index.obj.get("folders")
        for folder, entry in (folders.items() if isinstance(folders, dict) else ()):
            if not (isinstance(folder, str) and isinstance(entry, dict)):
                continue
            rel = PurePath(folder).as_posix()
            for path in paths.get(entry.get("argocdApplication"), ()):
                if rel == ".":
                    names.add(path)
                elif path.endswith("/" + rel):
                    names.add(path[:-len(rel) - 1])
    return out


def _checked_folders(trees: dict[PurePath, set[str]], path: str) -> Iterator[tuple[PurePath, PurePath]]:
    """(tree, folder): the folder an Application's source path names in each checked dist/ whose
    name the path uses (_tree_names)."""
    for root, names in trees.items():
        rel = next((path[len(n) + 1:] for n in sorted(names) if path == n or path.startswith(n + "/")), None)
        if rel is not None:
            yield root, root.joinpath(rel)


def application_path_exists(index: Index, rule: Rule) -> Iterator[Violation]:
    """An Application whose folder of a checked dist/ (its DistIndex's folder: the Application's
    path ``dist/apps/x`` in the tree ``.../dist``, or in a tree named otherwise whose index places
    the Applications) holds no checked file: Argo CD stops at "app path does not exist" and
    prunes nothing (git keeps no empty folder)."""
    trees = _tree_names(index)
    if not trees:
        return
    folders = {PurePath(d.file).parent for d in index.docs}
    for app, _, path, _ in _directory_sources(index):
        for root, folder in _checked_folders(trees, path):
            if not any(f == folder or folder in f.parents for f in folders):
                yield Violation(app, "spec.source.path", f"{path} holds no manifest in {root}")


#: etcd refuses a request larger than this (go.etcd.io/etcd/server/v3 embed/config.go
#: DefaultMaxRequestBytes = 1.5 MiB, v3.5.x; kube-apiserver stores each object in one request).
ETCD_MAX_REQUEST_BYTES = 3 * 1024 * 1024 // 2


def too_big_for_etcd(index: Index, rule: Rule) -> Iterator[Violation]:
    """Objects whose JSON alone exceeds etcd's request limit: no apply mode stores them."""
    for doc in index.api_objects():
        size = doc.json_size
        if size > ETCD_MAX_REQUEST_BYTES:
            yield Violation(doc, "metadata.name", f"the object is {size} bytes of JSON; etcd stores at most "
                            f"{ETCD_MAX_REQUEST_BYTES} bytes per request, server-side apply included")

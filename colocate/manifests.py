"""Read manifests from files and folders, keeping each object's file and line."""
from __future__ import annotations

import bisect
import errno
import fnmatch
import gc
import json
import os
import re
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import yaml

from colocate import goyaml
from colocate.errors import InputError
from colocate.model.names import tf_role
from colocate.model.objects import ObjectView

#: Files colocate writes for tools other than the API server: no metadata, never applied.
NON_API_KINDS = frozenset({
    "DistIndex", "KubeletConfiguration", "JoinConfiguration", "ClusterConfiguration", "KubeProxyConfiguration", "NodePool",
})
#: Cluster-scoped kinds; every other API kind is namespaced.
CLUSTER_SCOPED_KINDS = frozenset({
    "Namespace", "Node", "PersistentVolume", "PriorityClass", "StorageClass", "CSIDriver", "CSINode",
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService", "RuntimeClass",
    "IngressClass", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "VolumeAttachment",
    "CertificateSigningRequest", "FlowSchema", "PriorityLevelConfiguration",
})


class _Stored:
    """A property computed once, then kept in the instance's ``__dict__`` (works on frozen
    dataclasses; Python 3.11's functools.cached_property takes a lock on every first use)."""

    def __init__(self, compute: Any):
        self.compute = compute

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.attribute] = self.compute(instance)
        return value


@dataclass(frozen=True)
class Doc(ObjectView):
    """One object, where it was read from."""

    file: str
    line: int
    obj: dict[str, Any]

    # A Doc never changes, and every rule asks these of every object: they are plain attributes,
    # filled when it is made (read ~5x faster than properties, measured over 424,000 objects).
    kind = _Stored(ObjectView.kind.fget)  # type: ignore[assignment]
    group = _Stored(ObjectView.group.fget)  # type: ignore[assignment]
    metadata = _Stored(ObjectView.metadata.fget)  # type: ignore[assignment]
    name = _Stored(ObjectView.name.fget)  # type: ignore[assignment]
    namespace = _Stored(ObjectView.namespace.fget)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        # ObjectView's properties, inline and in one order for all (the instances keep sharing
        # their dicts' keys): calling them here cost 0.8 s more per 81,000 objects.
        obj = self.obj
        kind, version, meta = obj.get("kind"), obj.get("apiVersion"), obj.get("metadata")
        if isinstance(kind, str) and isinstance(version, str):  # else computed when asked, and fails then
            meta = meta if isinstance(meta, dict) else {}
            self.__dict__.update(kind=kind, group=version.rpartition("/")[0], metadata=meta,
                                 name=str(meta.get("name", "")), namespace=str(meta.get("namespace", "")),
                                 is_api_object=kind not in NON_API_KINDS)

    @_Stored
    def is_api_object(self) -> bool:
        return self.kind not in NON_API_KINDS

    @_Stored
    def json_size(self) -> int:
        """Bytes of the object as compact JSON (what client-side apply's annotation and etcd
        store); computed once, as two rules ask it of every object."""
        return len(json.dumps(self.obj, separators=(",", ":")))

    @property
    def namespaced(self) -> bool:
        return self.is_api_object and self.kind not in CLUSTER_SCOPED_KINDS

    @property
    def ref(self) -> str:
        """``Kind/namespace/name``, with ``-`` for a missing namespace or name."""
        return f"{self.kind}/{self.namespace or '-'}/{self.name or '-'}"


#: Suffixes of manifest files in folders, case-insensitive, as kubeconform v0.7.0 takes them.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
#: Files that make a folder the input of a renderer, not plain manifests, and the hint to render it.
#: Argo CD picks its tool by the same names (docs/input-forms.md).
_RENDERED_BY = {
    "Chart.yaml": ("a Helm chart (Chart.yaml)", "render it and check the output: helm template {dir} > rendered.yaml "
                                                "&& colocate check rendered.yaml"),
    **{name: (f"a Kustomize folder ({name})", "render it and check the output: kustomize build {dir} > rendered.yaml "
                                              "&& colocate check rendered.yaml")
       for name in ("kustomization.yaml", "kustomization.yml", "Kustomization")},
}


@dataclass(frozen=True)
class Skipped:
    """A folder left out because it is not plain manifests, with why and how to check it."""

    path: str
    reason: str
    hint: str


@dataclass(frozen=True)
class Inputs:
    """The manifest files under some paths, each once, and the folders left out."""

    files: tuple[Path, ...]
    skipped: tuple[Skipped, ...]


def _rendered(folder: str, names: list[str]) -> Skipped | None:
    marker = next((n for n in _RENDERED_BY if n in names), None)
    if marker is None:
        return None
    reason, hint = _RENDERED_BY[marker]
    return Skipped(folder, f"not plain manifests: {reason}; its files were not checked", hint.format(dir=folder))


def excluded(rel: str, patterns: Iterable[str]) -> bool:
    """``rel`` (a path relative to a checked folder, with /) matches an --exclude pattern: the
    whole path, or any one of its names (``chart`` leaves out every folder or file so named)."""
    parts = rel.split("/")
    return any(fnmatch.fnmatchcase(rel, p) or any(fnmatch.fnmatchcase(part, p) for part in parts) for p in patterns)


def _walk(folder: Path, skipped: list[Skipped], exclude: tuple[str, ...] = ()) -> list[Path]:
    """Manifest files under ``folder``, sorted. Symbolic links to folders are not followed (as
    kubeconform's filepath.Walk), so a link loop cannot make the walk endless. Hidden folders
    (``.github``, ``.git``) are left out, unless named; so is whatever ``exclude`` matches."""
    def unreadable(exc: OSError) -> None:
        raise InputError(exc.filename or str(folder), "", f"cannot read the folder: {exc.strerror}")

    out = []
    for top, dirs, names in os.walk(folder, onerror=unreadable):
        rel = Path(top).relative_to(folder).as_posix()
        prefix = "" if rel == "." else rel + "/"
        dirs[:] = [d for d in dirs if not d.startswith(".") and not excluded(prefix + d, exclude)]
        notice = _rendered(top, names)
        if notice:
            skipped.append(notice)
            dirs[:] = []
            continue
        out.extend(Path(top, n) for n in names
                   if n.lower().endswith(MANIFEST_SUFFIXES) and not excluded(prefix + n, exclude))
    return sorted(out)


def find(paths: list[Path], exclude: Iterable[str] = ()) -> Inputs:
    """Every manifest file under the paths, in a stable order, each file once however often it is
    named; folders of Helm charts and Kustomize are left out with a notice, and in folders, hidden
    folders and what ``exclude`` matches. An unknown path is bad input."""
    found: list[Path] = []
    skipped: list[Skipped] = []
    for path in paths:
        if path.is_dir():
            found.extend(_walk(path, skipped, tuple(exclude)))
        elif os.path.lexists(path):
            # Named explicitly: a broken or looping link, or an unreadable file, is reported when read.
            notice = _rendered(str(path.parent), [path.name])
            if notice:
                skipped.append(notice)
            else:
                found.append(path)
        else:
            raise InputError(str(path), "", "no such file or folder")
    seen: set[str] = set()
    unique = []
    for path in found:
        key = os.path.realpath(path)
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return Inputs(tuple(unique), tuple(skipped))


def files(paths: list[Path]) -> list[Path]:
    """Every manifest file under the paths (see :func:`find`)."""
    return list(find(paths).files)


def _read(path: Path) -> str:
    """The file's text. Links that loop or dangle, unreadable, binary and non-UTF-8 files are bad input."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(str(path), "", "not a regular file")
        data = path.read_bytes()
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.path.islink(path):
            raise InputError(str(path), "", f"broken symbolic link to {os.readlink(path)}") from None
        if exc.errno == errno.ELOOP:
            raise InputError(str(path), "", "symbolic link loop") from None
        raise InputError(str(path), "", f"cannot read the file: {exc.strerror}") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(str(path), "1", "UTF-16 text (it starts with a UTF-16 byte order mark): manifests must be "
                                         "UTF-8; convert it, e.g. iconv -f UTF-16 -t UTF-8")
    if b"\0" in data:
        line = data[:data.index(b"\0")].count(b"\n") + 1
        raise InputError(str(path), str(line), "NUL byte: a binary file, not YAML or JSON")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(str(path), str(line), f"not UTF-8 text (byte 0x{data[exc.start]:02x}): "
                                               "manifests must be UTF-8") from None


def _yaml_documents(path: Path, text: str) -> Iterator[tuple[int, Any, Any]]:
    """(line, object, node) per YAML document."""
    loader = goyaml.Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            line = node.start_mark.line + 1
            # direct() leaves aliases, and all else unusual, to the general path below.
            try:
                obj = goyaml.direct(node)
            except (goyaml.Unusual, RecursionError):
                obj = goyaml.Unusual
            if obj is goyaml.Unusual:
                obj = goyaml.plain(loader.construct_document(node), str(path), line, len(text))
            yield line, obj, node
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        hint = " (it looks like a Helm template: render it with helm template first)" if "{{" in text else ""
        raise InputError(str(path), str(mark.line + 1) if mark else "",
                         f"not valid YAML: {exc.problem or exc.context}{hint}") from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise InputError(str(path), str(line), f"control character U+{code:04X} is not allowed in YAML "
                                               "(write it as an escape in a double-quoted string)") from None
    except RecursionError:
        raise InputError(str(path), "", "nested too deeply") from None
    finally:
        loader.dispose()


def _json_documents(path: Path, text: str) -> Iterator[tuple[int, Any, Any]]:
    """(line, object, None) per JSON value of a stream (load_files accepts one)."""
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n\ufeff":
            pos += 1
        if pos == len(text):
            return
        line = text.count("\n", 0, pos) + 1
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(str(path), str(exc.lineno), f"not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise InputError(str(path), str(line), "nested too deeply") from None
        yield line, obj, None


def _item_nodes(node: Any, count: int) -> list[Any]:
    """The nodes of a YAML List's ``items`` (for their lines); Nones without them (JSON)."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "items" and isinstance(value, yaml.SequenceNode) and len(value.value) == count:
                return value.value
    return [None] * count


def _list_items(obj: dict[str, Any]) -> list[Any] | None:
    """The items when the object is a list (``kind: List``, ``ConfigMapList``...), else None. Like
    Argo CD and kubectl, any object with an ``items`` array is one, and ``items: null`` without
    spec or status is an empty one (docs/input-forms.md)."""
    items = obj.get("items", ())
    if isinstance(items, list):
        return items
    if items is None and "spec" not in obj and "status" not in obj:
        return []
    return None


def _objects(path: Path, line: int, obj: Any, node: Any, where: str = "") -> Iterator[Doc]:
    """The object, or the items of a List (Lists in Lists too), never the List itself."""
    if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str) or not obj["kind"] \
            or not isinstance(obj.get("apiVersion"), str):
        raise InputError(str(path), str(line), f"{where}not a Kubernetes object (needs apiVersion and kind)")
    items = _list_items(obj)
    if items is None and obj["kind"].lower() == "list" and "items" in obj:
        # kubeconform would validate none of it (pkg/resource/resource.go unmarshals items as an array).
        raise InputError(str(path), str(line), f"{where}the items of a List must be an array, not "
                         f"{type(obj['items']).__name__}")
    if items is None:
        yield Doc(str(path), line, obj)
        return
    for i, (item_node, item) in enumerate(zip(_item_nodes(node, len(items)), items)):
        item_line = item_node.start_mark.line + 1 if item_node is not None else line
        yield from _objects(path, item_line, item, item_node, f"items[{i}] of the {obj['kind']}: ")


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic collector off while YAML is composed and constructed. Nodes and parsed
    values are trees without cycles, so it would find nothing, but it rescans every live
    container at each collection: with 10,000 objects that cost more than the parsing itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


#: For callers that build many containers themselves (the verdict cache reading its entries).
collector_paused = _collector_paused


def kubeconform_resources(obj: dict[str, Any]) -> int:
    """How many resources kubeconform v0.7.0 validates for one top-level document: the items of
    a ``kind: List`` one by one (an ``items`` that is not an array gives none), anything else,
    typed lists included, as one (pkg/resource/resource.go, Resources)."""
    if str(obj.get("kind", "")).lower() == "list":
        items = obj.get("items")
        return len(items) if isinstance(items, list) else 0
    return 1


def load_files(paths: Iterable[Path], tally: list[int] | None = None,
               unusable: list[tuple[Path, InputError]] | None = None) -> list[Doc]:
    """Parse every object in the files (see _objects). ``tally``, when given, receives the
    number of resources kubeconform validates in them (kubeconform_resources). With
    ``unusable``, a file that is not manifests is listed there and left out, instead of
    stopping the whole load."""
    with _collector_paused():
        return _load_files(paths, tally, unusable)


def _load_files(paths: Iterable[Path], tally: list[int] | None = None,
                unusable: list[tuple[Path, InputError]] | None = None) -> list[Doc]:
    docs: list[Doc] = []
    resources = 0
    for path in paths:
        if unusable is None:
            found, count = _load_file(path)
        else:
            try:
                found, count = _load_file(path)
            except InputError as exc:
                unusable.append((path, exc))
                continue
        docs.extend(found)
        resources += count
    if tally is not None:
        tally.append(resources)
    return docs


def _load_file(path: Path) -> tuple[list[Doc], int]:
    """The objects of one file, and how many resources kubeconform validates in it."""
    docs: list[Doc] = []
    resources = 0
    text = _read(path)
    documents = _json_documents if path.suffix.lower() == ".json" else _yaml_documents
    for count, (line, obj, node) in enumerate(documents(path, text)):
        if count and documents is _json_documents:
            raise InputError(str(path), str(line), "a second JSON object: Argo CD reads one object per .json "
                                                   "file (kubectl reads more); split the file, or wrap the "
                                                   "objects in a kind: List")
        if obj is not None:
            docs.extend(_objects(path, line, obj, node))
            resources += kubeconform_resources(obj)
    return docs, resources


def load_texts(texts: Mapping[Path, str]) -> list[Doc]:
    """The objects of YAML texts not (yet) on disk, named by the paths they will have."""
    docs: list[Doc] = []
    with _collector_paused():
        for path, text in texts.items():
            for line, obj, node in _yaml_documents(path, text):
                if obj is not None:
                    docs.extend(_objects(path, line, obj, node))
    return docs


def load(paths: list[Path]) -> list[Doc]:
    """Parse every object under the paths. A document that is not a Kubernetes object is bad input."""
    return load_files(find(paths).files)


#: Where each workload kind keeps its pod template spec.
POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


@dataclass(frozen=True)
class PodSpec:
    """A pod spec inside an object, with its dotted field path and its pod labels."""

    doc: Doc
    path: str
    spec: dict[str, Any]
    labels: dict[str, str]
    #: The TFJob replica type (``Chief``, ``Worker``, ``PS``...); empty for other workloads.
    role: str = ""
    #: Its key in ``tfReplicaSpecs`` as written (``worker`` is the replica type Worker).
    replica_key: str = ""


def _get(obj: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def pod_specs(doc: Doc) -> Iterator[PodSpec]:
    """Every pod spec the object creates pods from: workloads, and each TFJob replica."""
    if doc.kind == "TFJob" and doc.group == "kubeflow.org":
        replicas = _get(doc.obj, ("spec", "tfReplicaSpecs")) or {}
        for role in sorted(replicas):
            template = _get(replicas, (role, "template")) or {}
            spec = template.get("spec")
            if isinstance(spec, dict):
                yield PodSpec(doc, f"spec.tfReplicaSpecs.{role}.template.spec", spec,
                              _get(template, ("metadata", "labels")) or {}, tf_role(role), role)
        return
    keys = POD_SPEC_PATHS.get(doc.kind)
    if not keys:
        return
    spec = _get(doc.obj, keys)
    if isinstance(spec, dict):
        labels = _get(doc.obj, ("metadata", "labels")) if doc.kind == "Pod" else _get(doc.obj, keys[:-1] + ("metadata", "labels"))
        yield PodSpec(doc, ".".join(keys), spec, labels or {})


class _LineLoader(goyaml.BaseLoader):  # type: ignore[valid-type,misc]
    """Composes nodes for their lines only: no tag is resolved (keys are compared as written)."""

    descend_resolver = staticmethod(slice)  # as goyaml.Loader: no path resolvers, nothing to do
    ascend_resolver = staticmethod(tuple)

    def resolve(self, kind, value, implicit):
        return ""


#: A line that starts a document: no document holds one, not even in a scalar (YAML 1.1, 9.1.2).
_DOCUMENT_START = re.compile(r"^---(?=[ \t\r\n]|$)", re.M)


def field_lines(path: Path, wanted: list[tuple[int, str]]) -> list[int]:
    """The line of each (object line, field path) in a file: the field's key, or that of the
    deepest part of the path the object has (a missing required field points at its parent);
    0 when not known. Composes again only the documents that hold the wanted objects (callers
    ask only for files with findings); the whole file if a document does not compose alone."""
    text = path.read_text(encoding="utf-8")
    starts, first_lines = [0], [1]
    for match in _DOCUMENT_START.finditer(text):
        if match.start():
            first_lines.append(first_lines[-1] + text.count("\n", starts[-1], match.start()))
            starts.append(match.start())
    starts.append(len(text))
    objects: dict[int, tuple[yaml.Node, int]] = {}
    try:
        for index in sorted({bisect.bisect_right(first_lines, line) - 1 for line, _ in wanted}):
            _compose(text[starts[index]:starts[index + 1]], first_lines[index] - 1, objects)
    except (yaml.YAMLError, RecursionError):
        objects = {}
        try:
            _compose(text, 0, objects)
        except (yaml.YAMLError, RecursionError):
            return [0] * len(wanted)  # a JSON file YAML cannot read: the objects' lines stand
    return [_field_line(objects[line][0], field, objects[line][1]) if line in objects else 0
            for line, field in wanted]


def _compose(text: str, offset: int, objects: dict[int, tuple[yaml.Node, int]]) -> None:
    """The objects of ``text`` by line (``offset`` lines into the file), with that offset."""
    loader = _LineLoader(text)
    try:
        with _collector_paused():
            while loader.check_node():
                _add_object(objects, loader.get_node(), offset)
    finally:
        loader.dispose()


def _add_object(objects: dict[int, tuple[yaml.Node, int]], node: yaml.Node, offset: int) -> None:
    """An object by its line, or the items of a List (the items win a line they share with their
    List). A function of its own: a nested one that calls itself is a reference cycle, which
    would keep the file's nodes alive until a cyclic collection."""
    objects[node.start_mark.line + 1 + offset] = node, offset
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "items" and isinstance(value, yaml.SequenceNode):
                for item in value.value:
                    _add_object(objects, item, offset)


def _field_line(node: yaml.Node, rest: str, offset: int = 0) -> int:
    """Follow ``spec.containers[0].image``, ``metadata.annotations[a.io/b]`` or keys holding dots
    (``data.x.json``) down the node tree; lines are ``offset`` into the file."""
    line = 0
    while rest:
        child = None
        if isinstance(node, yaml.SequenceNode) and rest.startswith("["):
            index, _, rest = rest[1:].partition("]")
            if index.isdigit() and int(index) < len(node.value):
                child = node.value[int(index)]
                line = child.start_mark.line + 1 + offset
        elif isinstance(node, yaml.MappingNode):
            if rest.startswith("["):
                wanted, _, after = rest[1:].partition("]")
                match = [(k, v) for k, v in node.value if k.value == wanted]
            else:
                # The longest key the path starts with, so keys holding dots are found whole.
                match = sorted(((k, v) for k, v in node.value if isinstance(k.value, str) and rest.startswith(k.value)
                                and rest[len(k.value):len(k.value) + 1] in ("", ".", "[", " ")),
                               key=lambda kv: -len(kv[0].value))
                after = rest[len(match[0][0].value):] if match else ""
            if match:
                key, child = match[0]
                line, rest = key.start_mark.line + 1 + offset, after
        if child is None:
            return line
        node, rest = child, rest.lstrip(". ")
    return line

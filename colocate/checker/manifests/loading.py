"""The objects of manifest files, read as go-yaml (Argo CD, kubeconform) reads them: YAML and
JSON streams, Lists expanded into their items, each object with its file and line."""
from __future__ import annotations

import errno
import gc
import json
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import yaml

from colocate.base import goyaml
from colocate.errors import InputError
from colocate.checker.manifests.discovery import find
from colocate.checker.manifests.doc import Doc


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

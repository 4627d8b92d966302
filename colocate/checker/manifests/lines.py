"""The line of a field inside an object of a file, for findings: the documents that hold the
objects composed again, for their nodes' lines only."""
from __future__ import annotations

import bisect
import re
from pathlib import Path

import yaml

from colocate.base.safe_yaml import SafeLoader
from colocate.checker.manifests.loading import collector_paused


class _LineLoader(SafeLoader):  # type: ignore[valid-type,misc]
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
        with collector_paused():
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

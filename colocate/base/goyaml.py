"""YAML as kubectl reads it: go-yaml v2's scalar resolution, and a fast route from composed
nodes to JSON values. The manifests reader and the data files colocate ships (the metric
catalog) share it; it knows nothing of Kubernetes objects."""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

import yaml

from colocate.errors import InputError
from colocate.base.safe_yaml import SafeLoader

# kubectl (and Argo CD, kubeconform) read YAML through sigs.k8s.io/yaml, which decodes with
# go-yaml v2 into plain values and converts them to JSON. PyYAML's YAML 1.1 resolver differs: it
# has no constructor for a bare `=` (the whole run aborted), turns `10:30` into 630 and dates into
# datetime objects, and reads `y`/`n` as strings. This resolver follows go-yaml v2.4.0's resolve().
_GO_SCALARS = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), ("bool", True)),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), ("bool", False)),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), ("null", None)),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), ("float", math.nan)),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), ("float", math.inf)),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), ("float", -math.inf)),
    "<<": ("merge", "<<"),
}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_INT = re.compile(r"(?P<sign>[-+]?)(?:0[xX](?P<hex>[0-9a-fA-F]+)|0[oO](?P<oct>[0-7]+)|0[bB](?P<bin>[01]+)"
                     r"|0(?P<oldoct>[0-7]+)|(?P<dec>0|[1-9][0-9]*))")


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), then ParseUint, as go-yaml v2 tries them (underscores dropped)."""
    match = _GO_INT.fullmatch(text.replace("_", ""))
    if not match:
        return None
    base, digits = next((b, match[g]) for g, b in (("hex", 16), ("oct", 8), ("bin", 2), ("oldoct", 8), ("dec", 10))
                        if match[g] is not None)
    value = int(digits, base)
    if match["sign"] == "-":
        value = -value
    if -2**63 <= value < 2**63 or (not match["sign"] and value < 2**64):
        return value
    return None


@lru_cache(maxsize=1 << 16)  # keys and values repeat across objects: resolve each spelling once
def _go_scalar(text: str) -> tuple[str, Any]:
    """(tag, value) of a plain scalar, as go-yaml v2 resolves it; timestamps stay strings there."""
    if text in _GO_SCALARS:
        return _GO_SCALARS[text]
    first = text[0]
    if first in "+-0123456789":
        value = _go_int(text)
        if value is not None:
            return "int", value
        plain = text.replace("_", "")
        if _YAML_STYLE_FLOAT.fullmatch(plain):
            return "float", float(plain)
    elif first == "." and _YAML_STYLE_FLOAT.fullmatch(text):
        return "float", float(text)
    return "str", text


_TAG = "tag:yaml.org,2002:"
_STR, _MAP, _SEQ, _NULL = _TAG + "str", _TAG + "map", _TAG + "seq", _TAG + "null"


@lru_cache(maxsize=1 << 16)
def _go_tag(text: str) -> str:
    return _TAG + _go_scalar(text)[0]


class Loader(SafeLoader):  # type: ignore[valid-type,misc]
    # libyaml's composer calls these three for every node: they are kept to a call each.
    # Path resolvers are never registered, so descending and ascending have nothing to do.
    descend_resolver = staticmethod(slice)  # any two arguments, no effect
    ascend_resolver = staticmethod(tuple)

    def resolve(self, kind, value, implicit, _scalar=yaml.ScalarNode, _sequence=yaml.SequenceNode):
        if kind is _scalar:  # node classes as defaults: a local read, not two attribute lookups per node
            return _go_tag(value) if implicit[0] else _STR
        return _SEQ if kind is _sequence else _MAP

    def _go_typed(self, node):
        tag, value = _go_scalar(self.construct_scalar(node))
        if _TAG + tag != node.tag:
            raise yaml.constructor.ConstructorError(None, None, f"cannot decode {value!r} as {node.tag}",
                                                    node.start_mark)
        return value

    def _untyped(self, node):
        """What go-yaml v2 gives for a tag it does not know, or a timestamp: the plain value."""
        if isinstance(node, yaml.MappingNode):
            return self.construct_mapping(node)
        if isinstance(node, yaml.SequenceNode):
            return self.construct_sequence(node)
        return self.construct_scalar(node)


for _tag in ("bool", "int", "float"):
    Loader.add_constructor(_TAG + _tag, Loader._go_typed)
for _tag in ("timestamp", "set", "omap", "pairs"):
    Loader.add_constructor(_TAG + _tag, Loader._untyped)
Loader.add_constructor(None, Loader._untyped)


def _go_key(key: Any) -> str | None:
    """A mapping key as sigs.k8s.io/yaml turns it into a JSON key; None where it refuses."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        return ".nan" if key != key else ".inf" if key == math.inf else "-.inf" if key == -math.inf else f"{key:g}"
    return None


class _Plain:
    """Turns a constructed document into JSON values, as sigs.k8s.io/yaml does, refusing what
    kubectl refuses: null keys, an alias inside itself, and aliases that multiply the document."""

    def __init__(self, file: str, line: int, budget: int):
        self.file, self.line, self.budget = file, line, budget
        self.open: set[int] = set()

    def __call__(self, value: Any) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise InputError(self.file, str(self.line), "aliases expand the document too much (a YAML bomb?)")
        if isinstance(value, (dict, list, tuple)):
            if id(value) in self.open:
                raise InputError(self.file, str(self.line), "an alias refers to the node that contains it")
            self.open.add(id(value))
            try:
                if isinstance(value, dict):
                    out = {}
                    for key, item in value.items():
                        name = _go_key(key)
                        if name is None:
                            raise InputError(self.file, str(self.line), f"mapping key {key!r} cannot be a JSON key")
                        out[name] = self(item)
                    return out
                return [self(item) for item in value]
            finally:
                self.open.discard(id(value))
        if isinstance(value, bytes):
            return value.decode("utf-8", "replace")
        if value is None or isinstance(value, (str, int, float)):
            return value
        return str(value)


def plain(value: Any, file: str, line: int, size: int) -> Any:
    try:
        return _Plain(file, line, 10 * size + 10_000)(value)
    except RecursionError:
        raise InputError(file, str(line), "nested too deeply") from None


class Unusual(Exception):
    """A node :func:`direct` leaves to PyYAML's constructor and :class:`_Plain`."""


_TYPED = {_TAG + "bool": "bool", _TAG + "int": "int", _TAG + "float": "float"}


def direct(node: Any, seen: set[int] | None = None) -> Any:
    """The node as JSON values, the same as ``plain(construct_document(node))`` for what
    manifests hold (string keys, the core tags, no aliases), at a fraction of the cost; raises
    Unusual for anything else (merge keys, other tags, non-string keys, typed values that do
    not decode, a mapping or sequence met twice: an alias), which then takes that slower, general
    path and its errors (an alias there is expanded within a budget, and one inside itself refused)."""
    if node.__class__ is yaml.ScalarNode:
        return _scalar(node)
    return _container(node, set() if seen is None else seen)


def _scalar(node: Any) -> Any:
    tag = node.tag
    if tag == _STR:
        return node.value
    if tag == _NULL:
        return None
    typed = _TYPED.get(tag)
    if typed is not None:
        kind, value = _go_scalar(node.value)
        if kind == typed:
            return value
    raise Unusual


def _container(node: Any, seen: set[int]) -> Any:
    """A mapping or sequence node. Scalars, most of the nodes, are read in the loops: a call
    each cost a third of the parse. A key is a string scalar: a typed one (1, true) is one key
    to PyYAML and another to JSON, the general path's to read."""
    if id(node) in seen:
        raise Unusual
    seen.add(id(node))
    cls, scalar = node.__class__, yaml.ScalarNode
    if cls is yaml.MappingNode and node.tag == _MAP:
        out = {}
        for key, value in node.value:
            if key.__class__ is not scalar or key.tag != _STR:
                raise Unusual
            if value.__class__ is not scalar:
                out[key.value] = _container(value, seen)
            elif value.tag == _STR:
                out[key.value] = value.value
            else:
                out[key.value] = _scalar(value)
        return out
    if cls is yaml.SequenceNode and node.tag == _SEQ:
        return [(item.value if item.tag == _STR else _scalar(item)) if item.__class__ is scalar
                else _container(item, seen) for item in node.value]
    raise Unusual


def load_plain(text: str, where: str) -> Any:
    """One YAML document of a file colocate ships, as JSON values (go-yaml v2's reading). Raises
    yaml.YAMLError for text that is not YAML; ``where`` names the file in the other errors."""
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            return direct(node)
        except (Unusual, RecursionError):
            pass
        return plain(loader.construct_document(node), where, node.start_mark.line + 1, len(text))
    finally:
        loader.dispose()


def load_all_plain(text: str, where: str) -> list[Any]:
    """Every document of a multi-document stream (a renderer's output), as :func:`load_plain`
    reads one; empty documents are left out."""
    loader = Loader(text)
    out = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            try:
                value = direct(node)
            except (Unusual, RecursionError):
                value = plain(loader.construct_document(node), where, node.start_mark.line + 1, len(text))
            if value is not None:
                out.append(value)
        return out
    finally:
        loader.dispose()

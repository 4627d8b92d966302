"""CustomResourceDefinition -> strict kubeconform JSON schema, one file per served version.

kubeconform v0.7.0 validates a custom resource only against a schema file it can find through a
``-schema-location`` template; with none it reports an error (or, with
``-ignore-missing-schemas``, silently skips the object). This module turns the
``spec.versions[].schema.openAPIV3Schema`` of a vendored CRD (``apiextensions.k8s.io/v1``) into
that file, following what kubeconform's own ``scripts/openapi2jsonschema.py`` (yannh/kubeconform
v0.7.0) does, made strict and correct where that script is neither:

* every object schema that declares ``properties`` gets ``additionalProperties: false``, the root
  included (the script leaves the root open unless ``DENY_ROOT_ADDITIONAL_PROPERTIES`` is set),
  except where the CRD says ``x-kubernetes-preserve-unknown-fields: true`` (the script ignores
  that marker and would close such objects);
* ``x-kubernetes-int-or-string: true`` (and the older ``format: int-or-string``) becomes
  ``type: [integer, string]``;
* ``nullable: true`` adds ``"null"`` to ``type`` (and to ``enum``);
* OpenAPI 3.0's boolean ``exclusiveMinimum``/``exclusiveMaximum`` become draft-07 numbers;
* ``x-kubernetes-embedded-resource: true`` objects accept ``apiVersion``, ``kind``, ``metadata``
  as the API server does;
* a leading ``^(?i)`` in a ``pattern`` becomes ``(?i)^`` (same meaning in Go RE2; Python's
  ``re`` rejects the first form, so jsonschema could not use the schema otherwise);
* the top level fixes ``apiVersion`` and ``kind`` with enums and requires them, and ``metadata``
  becomes a closed, typed subset of ``ObjectMeta`` (the script leaves the CRD's bare
  ``{type: object}``, so ``metadata.lables`` or a non-string label value would pass).

Output is JSON Schema draft-07 (``$schema`` set). kubeconform compiles schemas with
santhosh-tekuri/jsonschema v6 and defaults to draft-04 when ``$schema`` is absent; under draft-04,
-06 and -07 it asserts ``format`` (``date-time``, ``duration``, ...), under 2019-09 and later it does
not, and a schema that fails to compile is reported only as "could not find schema".

The same conversion serves hand-written schema sources (``kind: HandwrittenSchema``; see
``policies/crds/handwritten/``) for config kinds that have no CRD, such as the kubelet's
``KubeletConfiguration`` and kubeadm's ``JoinConfiguration``.

:func:`prepare_core_schemas` (colocate/base/schema_cache.py, which the check runs) makes
kubernetes-validate's Kubernetes schemas usable by kubeconform offline; see its docstring.
"""
from __future__ import annotations

import copy
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


from colocate.base import goyaml
from colocate.base.schema_cache import CORE_SCHEMA_LOCATION, CRD_SCHEMA_LOCATION, prepare_core_schemas
from colocate.schemagen import DRAFT, GENERATED_MARK, SchemaSourceError, dump_schema

__all__ = [
    "CORE_SCHEMA_LOCATION",
    "CRD_SCHEMA_LOCATION",
    "SchemaSourceError",
    "convert_schema",
    "crd_to_schemas",
    "dump_schema",
    "handwritten_to_schemas",
    "load_documents",
    "prepare_core_schemas",
    "read_source_header",
    "write_schemas",
]


HEADER_END = "# --- end of colocate header ---"

#: Every file :func:`write_schemas` writes has a ``$comment`` starting with this; the generator
#: treats only such files as its own (others in policies/schemas/ are left alone).

# The metadata a namespaced or cluster-scoped custom resource may carry: the writable fields of
# io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta (kubernetes-validate v1.28.0 _definitions.json),
# closed like kubernetes-validate's strict core schemas. creationTimestamp may be null, as
# `kubectl create --dry-run -o yaml` and `helm template` print it.
_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
OBJECT_META: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Standard object metadata (a closed subset of ObjectMeta).",
    "properties": {
        "name": _STRING,
        "generateName": _STRING,
        "namespace": _STRING,
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "finalizers": {"type": "array", "items": _STRING},
        "ownerReferences": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    "apiVersion": _STRING,
                    "kind": _STRING,
                    "name": _STRING,
                    "uid": _STRING,
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
        "uid": _STRING,
        "resourceVersion": _STRING,
        "generation": {"type": "integer"},
        "selfLink": _STRING,
        "creationTimestamp": {"type": ["string", "null"], "format": "date-time"},
        "deletionTimestamp": {"type": "string", "format": "date-time"},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "managedFields": {"type": "array", "items": {"type": "object"}},
    },
}

_INT_OR_STRING_ANYOF = [{"type": "integer"}, {"type": "string"}]
_LEADING_FLAGS = re.compile(r"^\^\(\?([a-zA-Z]+)\)")


# --------------------------------------------------------------------------------------------
# Node conversion


def _add_null(node: dict[str, Any]) -> None:
    typ = node.get("type")
    if typ is None:
        for key in ("anyOf", "oneOf"):
            if key in node and {"type": "null"} not in node[key]:
                node[key].append({"type": "null"})
        return
    types = list(typ) if isinstance(typ, list) else [typ]
    if "null" not in types:
        types.append("null")
    node["type"] = types
    if "enum" in node and None not in node["enum"]:
        node["enum"] = [*node["enum"], None]


def convert_schema(node: Any, path: str = "") -> Any:
    """Return a strict JSON-schema copy of one OpenAPI v3 (structural) schema node.

    Walks only schema positions (``properties`` values, ``items``, ``additionalProperties``,
    ``allOf``/``anyOf``/``oneOf`` members, ``not``), so a property that happens to be called
    ``type`` or ``properties`` is never mistaken for a keyword. ``path`` is used in errors.
    """
    if isinstance(node, bool):
        return node
    if not isinstance(node, Mapping):
        raise SchemaSourceError(f"{path or '/'}: schema must be a mapping, got {type(node).__name__}")
    out: dict[str, Any] = copy.deepcopy(dict(node))

    if "properties" in out:
        props = out["properties"]
        if not isinstance(props, Mapping):
            raise SchemaSourceError(f"{path}/properties: must be a mapping")
        for name in props:
            if not isinstance(name, str):
                # PyYAML reads unquoted on/off/yes/no keys as booleans (YAML 1.1).
                raise SchemaSourceError(f"{path}/properties: non-string property name {name!r}")
        out["properties"] = {
            name: convert_schema(sub, f"{path}/properties/{name}") for name, sub in props.items()
        }
    if isinstance(out.get("items"), (Mapping, bool)):
        out["items"] = convert_schema(out["items"], f"{path}/items")
    elif isinstance(out.get("items"), list):
        out["items"] = [convert_schema(s, f"{path}/items/{i}") for i, s in enumerate(out["items"])]
    if isinstance(out.get("additionalProperties"), Mapping):
        out["additionalProperties"] = convert_schema(
            out["additionalProperties"], f"{path}/additionalProperties"
        )
    for key in ("allOf", "anyOf", "oneOf"):
        if key in out:
            out[key] = [convert_schema(s, f"{path}/{key}/{i}") for i, s in enumerate(out[key])]
    if isinstance(out.get("not"), Mapping):
        out["not"] = convert_schema(out["not"], f"{path}/not")

    # int-or-string: controller-gen writes anyOf [integer, string] + x-kubernetes-int-or-string.
    if out.get("x-kubernetes-int-or-string") is True or out.get("format") == "int-or-string":
        if out.get("anyOf") == _INT_OR_STRING_ANYOF or out.get("anyOf") == _INT_OR_STRING_ANYOF[::-1]:
            del out["anyOf"]
        if out.get("format") == "int-or-string":
            del out["format"]
        out["type"] = ["integer", "string"]

    # OpenAPI 3.0 / draft-04 boolean exclusive bounds -> draft-06+ numeric bounds.
    for excl, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(excl), bool):
            if out.pop(excl) and bound in out:
                out[excl] = out.pop(bound)

    if out.get("x-kubernetes-embedded-resource") is True and "properties" in out:
        out["properties"].setdefault("apiVersion", {"type": "string"})
        out["properties"].setdefault("kind", {"type": "string"})
        out["properties"].setdefault("metadata", {"type": "object"})

    if out.pop("nullable", False) is True:
        _add_null(out)

    # Go RE2 (kubeconform) accepts an inline flag group after "^", as in prometheus-operator's
    # `^(?i)(abort|warn)?$`; Python's re (jsonschema) rejects a global flag that is not at the
    # very start. `(?i)^...` means the same to both.
    if isinstance(out.get("pattern"), str):
        out["pattern"] = _scoped_flags(_LEADING_FLAGS.sub(r"(?\1)^", out["pattern"]))

    if (
        "properties" in out
        and "additionalProperties" not in out
        and out.get("x-kubernetes-preserve-unknown-fields") is not True
    ):
        out["additionalProperties"] = False
    return out


def _top_level(
    schema: Mapping[str, Any], group: str, version: str, kind: str, comment: str | None
) -> dict[str, Any]:
    api_version = f"{group}/{version}" if group else version
    out = convert_schema(schema)
    if out.get("type", "object") != "object":
        raise SchemaSourceError(f"{kind} {api_version}: top-level schema must be an object")
    out["type"] = "object"
    props = out.setdefault("properties", {})
    props["apiVersion"] = {**props.get("apiVersion", {}), "type": "string", "enum": [api_version]}
    props["kind"] = {**props.get("kind", {}), "type": "string", "enum": [kind]}
    if "metadata" in props:
        props["metadata"] = copy.deepcopy(OBJECT_META)
    required = list(out.get("required", []))
    for key in ("kind", "apiVersion"):
        if key not in required:
            required.insert(0, key)
    out["required"] = required
    if out.get("x-kubernetes-preserve-unknown-fields") is not True:
        out["additionalProperties"] = False
    out["$schema"] = DRAFT
    if comment:
        out["$comment"] = comment
    return out


def _file_name(kind: str, version: str) -> str:
    return f"{kind.lower()}_{version}.json"


def crd_to_schemas(crd: Mapping[str, Any], *, comment: str | None = None) -> dict[str, dict]:
    """Convert one ``apiextensions.k8s.io/v1`` CRD to ``{"<kind lower>_<version>.json": schema}``.

    One entry per version with ``served: true`` (versions not served are skipped: the API server
    rejects objects of those versions). ``comment`` becomes the schema's ``$comment``.
    """
    if crd.get("kind") != "CustomResourceDefinition":
        raise SchemaSourceError(f"not a CustomResourceDefinition: kind={crd.get('kind')!r}")
    if crd.get("apiVersion") != "apiextensions.k8s.io/v1":
        raise SchemaSourceError(
            f"only apiextensions.k8s.io/v1 CRDs are supported, got {crd.get('apiVersion')!r}"
        )
    spec = crd["spec"]
    group, kind = spec["group"], spec["names"]["kind"]
    out: dict[str, dict] = {}
    for version in spec.get("versions") or []:
        if not version.get("served", False):
            continue
        try:
            schema = version["schema"]["openAPIV3Schema"]
        except (KeyError, TypeError):
            raise SchemaSourceError(
                f"{kind} {group}/{version.get('name')}: served version has no openAPIV3Schema"
            ) from None
        out[_file_name(kind, version["name"])] = _top_level(
            schema, group, version["name"], kind, comment
        )
    if not out:
        raise SchemaSourceError(f"{kind} {group}: no served version with a schema")
    return out


def handwritten_to_schemas(doc: Mapping[str, Any], *, comment: str | None = None) -> dict[str, dict]:
    """Convert a ``kind: HandwrittenSchema`` source (group, version, schemaKind, openAPIV3Schema)."""
    if doc.get("kind") != "HandwrittenSchema":
        raise SchemaSourceError(f"not a HandwrittenSchema: kind={doc.get('kind')!r}")
    missing = [k for k in ("group", "version", "schemaKind", "openAPIV3Schema") if k not in doc]
    if missing:
        raise SchemaSourceError(f"HandwrittenSchema misses {', '.join(missing)}")
    kind, version = doc["schemaKind"], doc["version"]
    return {
        _file_name(kind, version): _top_level(
            doc["openAPIV3Schema"], doc["group"], version, kind, comment
        )
    }


# --------------------------------------------------------------------------------------------
# Files


def read_source_header(text: str) -> dict[str, str]:
    """Return the ``# key: value`` lines of a vendored file's header (up to HEADER_END)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip() == HEADER_END:
            return fields
        if not line.startswith("#"):
            return {}
        key, sep, value = line[1:].strip().partition(": ")
        if sep and key and " " not in key:
            fields[key] = value.strip()
    return {}


def vendored_body(text: str) -> str:
    """The upstream bytes of a vendored file: everything after the HEADER_END line."""
    marker = HEADER_END + "\n"
    idx = text.find(marker)
    return text if idx < 0 else text[idx + len(marker) :]


def load_documents(path: str | os.PathLike[str]) -> list[dict]:
    """Load every non-empty YAML document of a file (CRDs and ``kind: List`` items flattened), as
    the API server's go-yaml reads them (an enum value ``=`` is a string, not PyYAML's value tag)."""
    docs: list[dict] = []
    for doc in goyaml.load_all_plain(Path(path).read_text(encoding="utf-8"), str(path)):
        if True:
            if doc.get("kind") == "List" or (doc.get("kind", "").endswith("List") and "items" in doc):
                docs.extend(d for d in doc.get("items") or [] if d)
            else:
                docs.append(doc)
    return docs


def _group_of(doc: Mapping[str, Any]) -> str:
    if doc.get("kind") == "CustomResourceDefinition":
        return doc["spec"]["group"]
    return doc["group"]


def _scoped_flags(pattern: str) -> str:
    """A flag group at the start of a group, ``((?i)a|b)``, as the scoped group ``((?i:a|b))``:
    RE2 applies the flag to the rest of the enclosing group, which the scoped form says in a way
    Python's re accepts too (prometheus-operator v0.70.0's AlertmanagerConfig month and weekday
    patterns). Patterns with an unbalanced group are left alone."""
    out, i = pattern, 0
    while True:
        start = out.find("((?", i)
        if start < 0:
            return out
        flags = re.match(r"\(\?([a-zA-Z]+)\)", out[start + 1:])
        if not flags:
            i = start + 1
            continue
        depth, j = 0, start
        while j < len(out):
            if out[j] == "\\":
                j += 2
                continue
            depth += {"(": 1, ")": -1}.get(out[j], 0)
            if depth == 0:
                break
            j += 1
        if j >= len(out):
            return pattern
        body = out[start + 1 + flags.end():j]
        out = f"{out[:start]}((?{flags.group(1)}:{body}){out[j:]}"
        i = start + 1


def _vendored_source(path: Path) -> str:
    """``<repository> <path>@<tag>`` of a file inside a tree of vendor/sources.yaml, else ""."""
    from colocate.base import vendored

    try:
        trees = vendored.load()
    except OSError:
        return ""
    for tree in sorted(trees.values(), key=lambda t: -len(t.path)):
        root = tree.root.resolve()
        if root in path.resolve().parents:
            inner = path.resolve().relative_to(root).as_posix()
            return f"{tree.repository} {tree.upstream_path}/{inner}@{tree.tag}"
    return ""


def schemas_for_file(
    path: str | os.PathLike[str], *, base_dir: str | os.PathLike[str] | None = None
) -> dict[tuple[str, str], dict]:
    """``{(group, file name): schema}`` for every CRD / HandwrittenSchema in one file."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    header = read_source_header(text)
    shown = path.relative_to(base_dir).as_posix() if base_dir else path.name
    if header.get("upstream-sha256"):
        actual = hashlib.sha256(vendored_body(text).encode("utf-8")).hexdigest()
        if actual != header["upstream-sha256"]:
            raise SchemaSourceError(
                f"{shown}: body sha256 {actual} != header upstream-sha256 "
                f"{header['upstream-sha256']} (vendored file was edited)"
            )
    comment = f"{GENERATED_MARK} (colocate/schemagen/crd.py) from {shown}"
    source = header.get("source") or _vendored_source(path)
    if source:
        comment += f"; upstream: {source}"
    comment += ". Do not edit."
    out: dict[tuple[str, str], dict] = {}
    for doc in load_documents(path):
        if doc.get("kind") == "CustomResourceDefinition":
            converted = crd_to_schemas(doc, comment=comment)
        elif doc.get("kind") == "HandwrittenSchema":
            converted = handwritten_to_schemas(doc, comment=comment)
        else:
            continue
        group = _group_of(doc)
        for name, schema in converted.items():
            if (group, name) in out:
                raise SchemaSourceError(f"{shown}: {group}/{name} defined twice")
            out[(group, name)] = schema
    if not out:
        raise SchemaSourceError(f"{shown}: no CustomResourceDefinition or HandwrittenSchema")
    return out


def write_schemas(
    crd_paths: Iterable[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    *,
    base_dir: str | os.PathLike[str] | None = None,
    exclude_groups: Iterable[str] = (),
) -> list[Path]:
    """Write ``<out_dir>/<group>/<kind lower>_<version>.json`` for every CRD in ``crd_paths``.

    Returns the written paths, sorted. Files are rewritten only when their bytes change.
    Groups in ``exclude_groups`` are skipped (their directories are left alone).
    """
    out_dir = Path(out_dir)
    excluded = set(exclude_groups)
    planned: dict[Path, str] = {}
    for crd_path in sorted(Path(p) for p in crd_paths):
        for (group, name), schema in schemas_for_file(crd_path, base_dir=base_dir).items():
            if group in excluded:
                continue
            target = out_dir / group / name
            if target in planned:
                raise SchemaSourceError(f"{group}/{name} comes from more than one source file")
            planned[target] = dump_schema(schema)
    for target, text in planned.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode("ascii")
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    return sorted(planned)

"""A strict kubeconform schema for ``kubeflow.org/v1`` TFJob, built from two pinned sources.

kubeconform finds no schema for a custom resource unless one is given, and the TFJob CRD's own
``openAPIV3Schema`` is of little use for catching mistakes: it leaves every object open (a typo
such as ``resoruces`` inside a container passes) and has no enums (``restartPolicy: Sometimes``
passes). This module writes ``policies/schemas/kubeflow.org/tfjob_v1.json``, which kubeconform
reads through the schema-location template
``policies/schemas/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json``.

Sources, both pinned:

* the CRD ``manifests/base/crds/kubeflow.org_tfjobs.yaml`` of kubeflow/training-operator
  ``v1.7.0``, vendored byte for byte at ``policies/crds/kubeflow.org_tfjobs.yaml``
  (from the Go module zip ``github.com/kubeflow/training-operator@v1.7.0``; its SHA-256 is
  checked below). It gives the TFJob structure: ``spec``, the replica spec, ``runPolicy``,
  ``schedulingPolicy``, ``status``.
* kubernetes-validate's strict Kubernetes ``v1.28.0`` definitions
  (``kubernetes_validate/kubernetes-json-schema/v1.28.0-local-strict/_definitions.json``).
  Each replica's ``template`` is ``io.k8s.api.core.v1.PodTemplateSpec`` from there, and the
  object's ``metadata`` is ``ObjectMeta``; the closure of their ``$ref``s is copied into the
  output's ``definitions``, so the file is self-contained (kubeconform resolves nothing
  outside it).

What the output adds to the CRD, each from the operator's Go source at v1.7.0:

* every object with ``properties`` is closed (``additionalProperties: false``);
* ``tfReplicaSpecs`` accepts only the keys Chief, Master, PS, Worker, Evaluator
  (``pkg/apis/kubeflow.org/v1/tensorflow_types.go``; the operator itself would accept, and
  create pods for, a misspelt ``Workers``), in any case: the operator's defaulting renames
  ``worker`` to ``Worker`` (``tensorflow_defaults.go`` setTensorflowTypeNamesToCamelCase,
  ``defaulting_utils.go`` setTypeNameToCamelCase, strings.EqualFold), and ``colocate simulate``
  runs such a job with the real operator;
* enums for ``restartPolicy`` (``common_types.go`` RestartPolicy*), ``cleanPodPolicy``
  (CleanPodPolicy* without the empty "undefined" value) and ``successPolicy``
  (``tensorflow_types.go`` SuccessPolicy*);
* ``apiVersion``/``kind`` fixed to ``kubeflow.org/v1``/``TFJob`` and required, with ``metadata``
  and ``spec``.

The TFJob types are hoisted into ``definitions`` under the swagger names the operator's Python
SDK is generated from (``kubeflow.org.v1.ReplicaSpec`` is SDK class ``KubeflowOrgV1ReplicaSpec``),
so a test can compare each one's fields with the SDK's ``attribute_map``.

Regenerate with ``scripts/gen_schemas.py``; ``--check`` fails when the committed file is stale.
Output is deterministic: sorted keys, two-space indent, one trailing newline.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from colocate import ROOT, config
from colocate.base import safe_yaml
from colocate.schemagen import DRAFT, GENERATED_MARK, SchemaSourceError, dump_schema
from colocate.model.names import TF_ROLES

#: The vendored upstream CRD and its SHA-256 (training-operator v1.7.0, unmodified).
CRD_FILE = ROOT / "policies" / "crds" / "kubeflow.org_tfjobs.yaml"
CRD_SHA256 = "3d90fd655c5a92e1519c1dcd0f7403a82a3ee578f4d67ad9b9696e4b71c899c7"

#: Where kubeconform finds the output (``{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}``).
SCHEMA_FILE = ROOT / "policies" / "schemas" / "kubeflow.org" / "tfjob_v1.json"

#: The Kubernetes version whose PodTemplateSpec a replica's ``template`` must match.
#: Versions as colocate.yaml pins them: the TFJob CRD's operator release, and the Kubernetes
#: version whose PodTemplateSpec a replica's template must match.
_PINS = config.load(ROOT / "colocate.yaml")
KUBERNETES_VERSION = _PINS.kubernetes_version
TRAINING_OPERATOR_VERSION = _PINS.training_operator_version

GROUP = "kubeflow.org"
VERSION = "v1"
KIND = "TFJob"
API_VERSION = f"{GROUP}/{VERSION}"

# Go constants of training-operator v1.7.0 (pkg/apis/kubeflow.org/v1/).
RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")  # common_types.go
CLEAN_POD_POLICIES = ("All", "Running", "None")  # common_types.go, minus Undefined ""
SUCCESS_POLICIES = ("", "AllWorkers")  # tensorflow_types.go


_K8S_DEFS_PREFIX = "#/$defs/"
_OUR_DEFS_PREFIX = "#/definitions/"
POD_TEMPLATE_SPEC = "io.k8s.api.core.v1.PodTemplateSpec"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

#: Swagger names of the TFJob types, as the operator's SDK names them (``kubeflow.org.v1.X`` is
#: class ``KubeflowOrgV1X``); the top level is the TFJob itself.
TFJOB = "kubeflow.org.v1.TFJob"
TFJOB_SPEC = "kubeflow.org.v1.TFJobSpec"
REPLICA_SPEC = "kubeflow.org.v1.ReplicaSpec"
RUN_POLICY = "kubeflow.org.v1.RunPolicy"
SCHEDULING_POLICY = "kubeflow.org.v1.SchedulingPolicy"
JOB_STATUS = "kubeflow.org.v1.JobStatus"
JOB_CONDITION = "kubeflow.org.v1.JobCondition"
REPLICA_STATUS = "kubeflow.org.v1.ReplicaStatus"


def kubernetes_definitions(version: str = KUBERNETES_VERSION) -> dict[str, Any]:
    """Return kubernetes-validate's strict ``$defs`` for Kubernetes ``version``.

    Raises
    ------
    SchemaSourceError
        If the installed kubernetes-validate has no strict schemas for that version.
    """
    import kubernetes_validate

    path = (
        Path(kubernetes_validate.__file__).parent
        / "kubernetes-json-schema"
        / f"v{version}-local-strict"
        / "_definitions.json"
    )
    if not path.is_file():
        raise SchemaSourceError(
            f"{path}: not found; install the kubernetes-validate pinned in pyproject.toml"
        )
    return json.loads(path.read_text(encoding="utf-8"))["$defs"]


def load_crd(path: Path = CRD_FILE, sha256: str = CRD_SHA256) -> dict[str, Any]:
    """Read the vendored CRD after checking it is the pinned upstream file, byte for byte."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise SchemaSourceError(
            f"{path}: SHA-256 {digest}, expected {sha256} (training-operator "
            f"{TRAINING_OPERATOR_VERSION} manifests/base/crds/kubeflow.org_tfjobs.yaml); "
            "restore the upstream file, or re-vendor deliberately and update CRD_SHA256"
        )
    return safe_yaml.load(data)


def crd_version_schema(crd: Mapping[str, Any], version: str = VERSION) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one served version of the CRD."""
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            return entry["schema"]["openAPIV3Schema"]
    raise SchemaSourceError(f"CRD {crd['metadata']['name']} has no version {version}")


def ref_closure(defs: Mapping[str, Any], roots: Iterable[str]) -> dict[str, Any]:
    """The definitions reachable from ``roots``, with ``#/$defs/`` refs rewritten to ``#/definitions/``."""
    out: dict[str, Any] = {}
    pending = list(roots)
    while pending:
        name = pending.pop()
        if name in out:
            continue
        if name not in defs:
            raise SchemaSourceError(f"kubernetes-validate has no definition {name!r}")
        node = copy.deepcopy(defs[name])
        for ref in _rewrite_refs(node):
            pending.append(ref)
        out[name] = node
    return out


def _rewrite_refs(node: Any) -> list[str]:
    """Rewrite every ``$ref`` under ``node`` in place; return the definition names referenced."""
    found: list[str] = []
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if not ref.startswith(_K8S_DEFS_PREFIX):
                raise SchemaSourceError(f"unexpected $ref form {ref!r} in kubernetes-validate")
            name = ref[len(_K8S_DEFS_PREFIX):]
            node["$ref"] = _OUR_DEFS_PREFIX + name
            found.append(name)
        for key, value in node.items():
            if key != "$ref":
                found.extend(_rewrite_refs(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_rewrite_refs(item))
    return found


def close_structural(node: Mapping[str, Any]) -> dict[str, Any]:
    """Turn a CRD structural-schema node into a strict JSON schema.

    Objects with ``properties`` get ``additionalProperties: false`` unless the CRD says
    ``x-kubernetes-preserve-unknown-fields``; maps (``additionalProperties`` given) stay maps.
    Everything else is copied as is: ``format``, ``default`` and ``x-kubernetes-*`` are
    annotations to a validator, and ``anyOf`` + ``pattern`` already express int-or-string.
    """
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: close_structural(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = close_structural(value)
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = [close_structural(sub) for sub in value]
        else:
            out[key] = copy.deepcopy(value)
    if (
        "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _hoist(parent: dict[str, Any], path: tuple[str, ...], name: str, defs: dict[str, Any]) -> dict[str, Any]:
    """Move the node at ``path`` under ``parent`` into ``defs[name]``; leave a ``$ref`` (keeping
    the node's description) in its place; return the moved node."""
    holder = parent
    for key in path[:-1]:
        holder = holder[key]
    node = holder[path[-1]]
    if not isinstance(node, dict) or node.get("type") != "object":
        raise SchemaSourceError(f"CRD node {'.'.join(path)} is not an object; upstream changed")
    defs[name] = node
    ref: dict[str, Any] = {"$ref": _OUR_DEFS_PREFIX + name}
    if "description" in node:
        ref["description"] = node["description"]
    holder[path[-1]] = ref
    return node


def any_case(word: str) -> str:
    """A regular expression for ``word`` in any ASCII case (``PS`` -> ``^[Pp][Ss]$``), as
    strings.EqualFold compares replica types; JSON Schema patterns have no case flag."""
    return "^" + "".join(f"[{c.upper()}{c.lower()}]" for c in word) + "$"


def _set_enum(obj: dict[str, Any], prop: str, values: tuple[str, ...], where: str) -> None:
    node = obj["properties"].get(prop)
    if node is None or node.get("type") != "string":
        raise SchemaSourceError(f"CRD {where}.{prop} is not a string; upstream changed")
    node["enum"] = list(values)


def build_schema(crd: Mapping[str, Any], k8s_defs: Mapping[str, Any]) -> dict[str, Any]:
    """Build the strict TFJob schema from the parsed CRD and kubernetes-validate's ``$defs``."""
    top = close_structural(crd_version_schema(crd))
    defs: dict[str, Any] = {}

    spec = _hoist(top, ("properties", "spec"), TFJOB_SPEC, defs)
    _set_enum(spec, "successPolicy", SUCCESS_POLICIES, "spec")

    run_policy = _hoist(spec, ("properties", "runPolicy"), RUN_POLICY, defs)
    _set_enum(run_policy, "cleanPodPolicy", CLEAN_POD_POLICIES, "spec.runPolicy")
    _hoist(run_policy, ("properties", "schedulingPolicy"), SCHEDULING_POLICY, defs)

    replica_specs = spec["properties"]["tfReplicaSpecs"]
    replica = _hoist(replica_specs, ("additionalProperties",), REPLICA_SPEC, defs)
    replica_ref = replica_specs.pop("additionalProperties")
    # Patterns alone: one subschema per key, so kubeconform reports each error once.
    replica_specs["patternProperties"] = {any_case(rtype): dict(replica_ref) for rtype in TF_ROLES}
    replica_specs["additionalProperties"] = False
    _set_enum(replica, "restartPolicy", RESTART_POLICIES, "spec.tfReplicaSpecs.*")
    template = replica["properties"]["template"]
    replica["properties"]["template"] = {"$ref": _OUR_DEFS_PREFIX + POD_TEMPLATE_SPEC}
    if "description" in template:
        replica["properties"]["template"]["description"] = template["description"]

    status = _hoist(top, ("properties", "status"), JOB_STATUS, defs)
    _hoist(status, ("properties", "conditions", "items"), JOB_CONDITION, defs)
    _hoist(status, ("properties", "replicaStatuses", "additionalProperties"), REPLICA_STATUS, defs)

    props = top["properties"]
    props["apiVersion"]["enum"] = [API_VERSION]
    props["kind"]["enum"] = [KIND]
    props["metadata"] = {"$ref": _OUR_DEFS_PREFIX + OBJECT_META}
    top["required"] = ["apiVersion", "kind", "metadata", "spec"]
    top["additionalProperties"] = False

    defs.update(ref_closure(k8s_defs, [POD_TEMPLATE_SPEC, OBJECT_META]))
    top["definitions"] = defs
    top["x-kubernetes-group-version-kind"] = [{"group": GROUP, "kind": KIND, "version": VERSION}]
    top["$schema"] = DRAFT
    top["description"] = (
        f"{KIND} {API_VERSION} (training-operator {TRAINING_OPERATOR_VERSION}), strict; "
        f"replica templates are Kubernetes v{KUBERNETES_VERSION} PodTemplateSpec. "
        f"{GENERATED_MARK} (colocate/schemagen/tfjob.py) from policies/crds/kubeflow.org_tfjobs.yaml "
        "and kubernetes-validate; do not edit."
    )
    _check_refs(top)
    return top


def _check_refs(schema: Mapping[str, Any]) -> None:
    """Every ``$ref`` must be a local ``#/definitions/<name>`` that exists (self-contained file)."""
    text = json.dumps(schema)
    for ref in set(re.findall(r'"\$ref": "([^"]*)"', text)):
        name = ref[len(_OUR_DEFS_PREFIX):]
        if not ref.startswith(_OUR_DEFS_PREFIX) or name not in schema["definitions"]:
            raise SchemaSourceError(f"dangling $ref {ref!r} in the generated schema")


def generate(crd_file: Path = CRD_FILE, kubernetes_version: str = KUBERNETES_VERSION) -> str:
    """The schema file's full text, from the vendored CRD and installed kubernetes-validate."""
    return dump_schema(build_schema(load_crd(crd_file), kubernetes_definitions(kubernetes_version)))

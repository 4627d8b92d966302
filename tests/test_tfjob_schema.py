"""The strict TFJob schema: up to date, used by real kubeconform, and in step with the operator's SDK.

Fixtures live in tests/fixtures/tfjob/: ``pass.<case>.yaml`` must validate, ``fail.<case>.yaml``
must be rejected with the message listed in REJECTIONS (a fixture without one fails the guard).
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import jsonschema
import kubernetes
import kubernetes_validate
import pytest
from kubeflow.training import models  # the test extra: kubeflow-training==1.7.0
from kubernetes import client as k8s_models

from colocate import ROOT
from colocate.schemagen import SCHEMA_LOCATION
from colocate.model.names import TF_ROLES
from colocate.schemagen import tfjob as tfjob_schema
from tests.helpers import yaml_load

FIXTURES = Path(__file__).parent / "fixtures" / "tfjob"
KUBECONFORM = ROOT / "bin" / "kubeconform"
OUR_LOCATION = str(ROOT / "policies" / "schemas") + "/" + SCHEMA_LOCATION
# kubernetes-validate's layout is v1.28.0-local-strict/<kind>[-<group>]-<version>.json. kubeconform
# v0.7.0 cannot compile those files offline (their "$id" sends "/api/_definitions.json" to
# https://kubernetes.io/), so for core kinds it answers "could not find schema"; for a TFJob our
# location answers first and this one is never read.
KUBERNETES_VALIDATE_LOCATION = (
    str(Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema")
    + "/{{.NormalizedKubernetesVersion}}-local-strict/{{.ResourceKind}}{{.KindSuffix}}.json"
)

#: fail fixture -> (instance location, kubeconform's message), as kubeconform v0.7.0 words it.
REJECTIONS = {
    "fail.container-field-typo.yaml": (
        "/spec/tfReplicaSpecs/Worker/template/spec/containers/0",
        "additional properties 'resoruces' not allowed",
    ),
    "fail.restart-policy.yaml": (
        "/spec/tfReplicaSpecs/Worker/restartPolicy",
        "value must be one of 'Always', 'OnFailure', 'Never', 'ExitCode'",
    ),
    "fail.replica-type.yaml": (
        "/spec/tfReplicaSpecs",
        "additional properties 'Workers' not allowed",
    ),
    "fail.run-policy-field.yaml": (
        "/spec/runPolicy",
        "additional properties 'cleanupPolicy' not allowed",
    ),
}
PASSING = sorted(p.name for p in FIXTURES.glob("pass.*.yaml"))


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(tfjob_schema.SCHEMA_FILE.read_text(encoding="utf-8"))


# --- generation ------------------------------------------------------------------------------


def test_committed_schema_equals_a_fresh_generation():
    committed = tfjob_schema.SCHEMA_FILE.read_text(encoding="utf-8")
    assert committed == tfjob_schema.generate(), (
        "policies/schemas/kubeflow.org/tfjob_v1.json is stale: run scripts/gen_schemas.py"
    )


def test_vendored_crd_is_the_pinned_upstream_file():
    crd = tfjob_schema.load_crd()  # raises SchemaSourceError on any byte of difference
    assert crd["metadata"]["name"] == "tfjobs.kubeflow.org"
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1"]


def test_a_changed_crd_is_refused(tmp_path):
    changed = tmp_path / "kubeflow.org_tfjobs.yaml"
    changed.write_bytes(tfjob_schema.CRD_FILE.read_bytes() + b"\n")
    with pytest.raises(tfjob_schema.SchemaSourceError, match="SHA-256"):
        tfjob_schema.load_crd(changed)


def test_schema_is_valid_draft4_and_self_contained(schema):
    # kubeconform turns a schema it cannot compile into "could not find schema", so check here.
    jsonschema.Draft4Validator.check_schema(schema)
    refs = set(re.findall(r'"\$ref": "([^"]*)"', json.dumps(schema)))
    assert refs, "no $ref at all: the PodTemplateSpec was not inlined"
    outside = sorted(r for r in refs if not r.startswith("#/definitions/"))
    assert outside == [], f"refs that leave the file: {outside}"
    dangling = sorted(r for r in refs if r.removeprefix("#/definitions/") not in schema["definitions"])
    assert dangling == []


def test_closed_objects_and_upstream_enums(schema):
    defs = schema["definitions"]
    spec = defs[tfjob_schema.TFJOB_SPEC]
    replicas = spec["properties"]["tfReplicaSpecs"]
    assert sorted(replicas["patternProperties"]) == sorted(tfjob_schema.any_case(r) for r in TF_ROLES)
    assert "properties" not in replicas and tfjob_schema.any_case("PS") == "^[Pp][Ss]$"
    assert replicas["additionalProperties"] is False
    replica = defs[tfjob_schema.REPLICA_SPEC]
    assert replica["properties"]["restartPolicy"]["enum"] == ["Always", "OnFailure", "Never", "ExitCode"]
    assert replica["properties"]["template"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"
    run_policy = defs[tfjob_schema.RUN_POLICY]
    assert run_policy["properties"]["cleanPodPolicy"]["enum"] == ["All", "Running", "None"]
    assert spec["properties"]["successPolicy"]["enum"] == ["", "AllWorkers"]
    for name, node in [("(top level)", schema), *defs.items()]:
        if "properties" in node:
            assert node.get("additionalProperties") is False, f"{name} is open"


# --- kubeconform ------------------------------------------------------------------------------


def kubeconform(fixture: Path) -> tuple[int, dict]:
    if not KUBECONFORM.is_file():
        pytest.fail(f"{KUBECONFORM} is missing: run make bootstrap")
    proc = subprocess.run(
        [
            str(KUBECONFORM),
            "-strict",
            "-summary",
            "-output", "json",
            "-kubernetes-version", tfjob_schema.KUBERNETES_VERSION,
            "-schema-location", OUR_LOCATION,
            "-schema-location", KUBERNETES_VALIDATE_LOCATION,
            str(fixture),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"kubeconform printed no JSON (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
    return proc.returncode, report


def test_every_fixture_has_an_expected_outcome():
    fails = sorted(p.name for p in FIXTURES.glob("fail.*.yaml"))
    assert fails == sorted(REJECTIONS)
    assert PASSING, "no pass.*.yaml fixture"
    pattern = re.compile(r"(pass|fail)\.[a-z0-9-]+\.yaml")
    unknown = sorted(p.name for p in FIXTURES.iterdir() if not pattern.fullmatch(p.name))
    assert unknown == []


@pytest.mark.parametrize("name", PASSING)
def test_kubeconform_accepts(name):
    code, report = kubeconform(FIXTURES / name)
    assert report["summary"] == {"valid": 1, "invalid": 0, "errors": 0, "skipped": 0}, report
    assert code == 0


@pytest.mark.parametrize("name", sorted(REJECTIONS))
def test_kubeconform_rejects(name):
    code, report = kubeconform(FIXTURES / name)
    assert code == 1
    assert report["summary"] == {"valid": 0, "invalid": 1, "errors": 0, "skipped": 0}, report
    [result] = report["resources"]
    where, message = REJECTIONS[name]
    assert result["status"] == "statusInvalid"
    assert f"tfjob_v1.json#' - at '{where}': {message}" in result["msg"], result["msg"]


@pytest.mark.parametrize("name", PASSING + sorted(REJECTIONS))
def test_python_jsonschema_agrees_with_kubeconform(schema, name):
    doc = yaml_load((FIXTURES / name).read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft4Validator(schema).iter_errors(doc))
    assert bool(errors) == name.startswith("fail."), [e.message for e in errors]


# --- drift against the operator's Python SDK (kubeflow-training 1.7.0) ------------------------

#: SDK class -> where it sits in our schema. "kubeflow.org.v1.X" is class "KubeflowOrgV1X".
SDK_PLACES = {
    "KubeflowOrgV1TFJob": None,  # the top level
    "KubeflowOrgV1TFJobSpec": tfjob_schema.TFJOB_SPEC,
    "KubeflowOrgV1ReplicaSpec": tfjob_schema.REPLICA_SPEC,
    "KubeflowOrgV1RunPolicy": tfjob_schema.RUN_POLICY,
    "KubeflowOrgV1SchedulingPolicy": tfjob_schema.SCHEDULING_POLICY,
    "KubeflowOrgV1JobStatus": tfjob_schema.JOB_STATUS,
    "KubeflowOrgV1JobCondition": tfjob_schema.JOB_CONDITION,
    "KubeflowOrgV1ReplicaStatus": tfjob_schema.REPLICA_STATUS,
}
_WRAPPED = re.compile(r"(?:list\[(?P<item>.+)\]|dict\(str, (?P<value>.+)\)|(?P<plain>.+))")
# The SDK's (openapi-generator's) Python type names -> the JSON types they stand for.
_JSON_TYPES = {"int": {"integer"}, "bool": {"boolean"}, "datetime": {"string"}}


def test_sdk_is_the_release_matching_the_operator():
    import kubeflow.training

    assert kubeflow.training.__version__ == tfjob_schema.TRAINING_OPERATOR_VERSION.lstrip("v")
    # kubernetes client NN.x is Kubernetes 1.NN; the pod template is compared against it below.
    assert kubernetes.__version__.split(".")[0] == tfjob_schema.KUBERNETES_VERSION.split(".")[1]


def _resolve(schema: dict, node: dict) -> tuple[str | None, dict]:
    name = None
    while "$ref" in node:
        name = node["$ref"].removeprefix("#/definitions/")
        node = schema["definitions"][name]
    return name, node


def _json_types(schema: dict, node: dict) -> set[str]:
    _, node = _resolve(schema, node)
    if "type" in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        return set(types) - {"null"}
    return set().union(*(_json_types(schema, n) for n in node.get("oneOf", []) + node.get("anyOf", [])))


def _model(type_name: str):
    cls = getattr(models, type_name, None) or getattr(k8s_models, type_name, None)
    return cls if hasattr(cls, "attribute_map") else None


def walk_sdk(schema: dict) -> tuple[dict, list[str]]:
    """Walk SDK models and our schema side by side from the TFJob down (pod template included).

    Returns the schema node each model class was compared at, and every disagreement: field
    sets, JSON types, and which definition a model-typed field points to.
    """
    places: dict[str, tuple[str, dict]] = {}
    problems: list[str] = []

    def visit(cls, node: dict, path: str) -> None:
        ref, node = _resolve(schema, node)
        if cls.__name__ in places:
            return
        places[cls.__name__] = (path, node)
        if ref is not None:
            want = (
                "kubeflow.org.v1." + cls.__name__.removeprefix("KubeflowOrgV1")
                if cls.__name__.startswith("KubeflowOrgV1")
                else re.sub(r"^V\d+(?:(?:alpha|beta)\d+)?", "", cls.__name__)
            )
            if not (ref == want or ref.endswith("." + want)):
                problems.append(f"{path}: SDK type {cls.__name__}, schema definition {ref}")
        sdk_fields = set(cls.attribute_map.values())
        our_fields = set(node.get("properties", {}))
        if sdk_fields != our_fields:
            problems.append(
                f"{path} ({cls.__name__}): only in SDK {sorted(sdk_fields - our_fields)}, "
                f"only in schema {sorted(our_fields - sdk_fields)}"
            )
        for attr, field in sorted(cls.attribute_map.items()):
            if field not in our_fields:
                continue
            sub = node["properties"][field]
            type_name = cls.openapi_types[attr]
            m = _WRAPPED.fullmatch(type_name)
            inner = m["item"] or m["value"] or m["plain"]
            got = _json_types(schema, sub)
            want_types = (
                {"array"} if m["item"] else {"object"} if m["value"] or _model(inner)
                else _JSON_TYPES.get(inner)
            )
            if type_name == "str":
                ok = "string" in got  # Quantity is str in the SDK, string|number in the schema
            else:
                ok = want_types is None or got == want_types  # "object" (IntOrString) is any
            if not ok:
                problems.append(f"{path}.{field}: SDK {type_name}, schema types {sorted(got)}")
            model = _model(inner)
            if model is None:
                continue
            if m["item"]:
                sub = _resolve(schema, sub)[1]["items"]
            elif m["value"]:
                holder = _resolve(schema, sub)[1]
                extra = holder.get("additionalProperties")
                # tfReplicaSpecs is closed to the replica types (in any case); each is the map's value.
                named = {**holder.get("properties", {}), **holder.get("patternProperties", {})}
                for key, value in sorted(named.items()):
                    visit(model, value, f"{path}.{field}.{key}")
                if not isinstance(extra, dict):
                    continue
                sub = extra
            visit(model, sub, f"{path}.{field}")

    visit(models.KubeflowOrgV1TFJob, schema, "$")
    return places, problems


@pytest.fixture(scope="module")
def sdk_walk(schema):
    return walk_sdk(schema)


@pytest.mark.parametrize("cls_name", sorted(SDK_PLACES))
def test_sdk_fields_equal_schema_properties(schema, cls_name):
    cls = getattr(models, cls_name)
    want = SDK_PLACES[cls_name]
    node = schema if want is None else schema["definitions"][want]
    assert set(cls.attribute_map.values()) == set(node["properties"]), (
        f"{cls_name} vs {want or 'top level'}: SDK and schema fields differ"
    )


def test_sdk_types_sit_at_the_matching_places(schema, sdk_walk):
    places, problems = sdk_walk
    assert problems == []
    for cls_name, want in SDK_PLACES.items():
        assert cls_name in places, f"{cls_name} is not reachable from the TFJob in the schema"
        node = schema if want is None else schema["definitions"][want]
        assert places[cls_name][1] is node, f"{cls_name} was compared at {places[cls_name][0]}"


def test_every_definition_is_checked_against_a_model(schema, sdk_walk):
    places, _ = sdk_walk
    checked = {id(node) for _, node in places.values()}
    ours = sorted(n for n in schema["definitions"] if n.startswith("kubeflow.org.v1."))
    assert ours == sorted(v for v in SDK_PLACES.values() if v)
    unchecked = sorted(
        name for name, node in schema["definitions"].items()
        if "properties" in node and id(node) not in checked
    )
    assert unchecked == [], "definitions no SDK/kubernetes model was compared with"


def test_the_tfjob_schema_uses_the_generators_one_draft():
    from colocate.schemagen import DRAFT

    schema = json.loads(tfjob_schema.SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["$schema"] == DRAFT
    jsonschema.Draft7Validator.check_schema(schema)

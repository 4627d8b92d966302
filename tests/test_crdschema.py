"""colocate.crdschema: CRD -> strict kubeconform schema, the committed schemas, and kubeconform itself."""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from colocate import ROOT, cli, config
from colocate.schemagen.crd import (
    CORE_SCHEMA_LOCATION,
    CRD_SCHEMA_LOCATION,
    HEADER_END,
    OBJECT_META,
    SchemaSourceError,
    convert_schema,
    crd_to_schemas,
    dump_schema,
    handwritten_to_schemas,
    prepare_core_schemas,
    read_source_header,
    vendored_body,
    write_schemas,
)
from tests.helpers import load_module, yaml_load, yaml_load_all

KUBECONFORM = ROOT / "bin" / "kubeconform"
FIXTURES = ROOT / "tests" / "fixtures" / "schemas"
SCHEMA_DIR = ROOT / "policies" / "schemas"
K8S_VERSION = config.load().kubernetes_version
CRD_DIR = ROOT / "policies" / "crds"


def _crd(schema: dict, *, versions: list[tuple[str, bool]] | None = None) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {"name": name, "served": served, "storage": i == 0,
                 "schema": {"openAPIV3Schema": schema}}
                for i, (name, served) in enumerate(versions or [("v1", True)])
            ],
        },
    }


WIDGET = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "values": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "open": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"inner": {"type": "object", "properties": {"a": {"type": "string"}}}},
                },
                "port": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                },
                "mode": {"type": "string", "enum": ["a", "b"], "nullable": True},
                "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
                # property names that look like keywords must stay property names
                "type": {"type": "string"},
                "properties": {"type": "object", "properties": {"z": {"type": "boolean"}}},
            },
        },
    },
}


# ------------------------------------------------------------------------------ converter units


def test_every_object_with_properties_is_closed_root_included():
    schema = crd_to_schemas(_crd(WIDGET))["widget_v1.json"]
    spec = schema["properties"]["spec"]
    assert schema["additionalProperties"] is False
    assert spec["additionalProperties"] is False
    assert spec["properties"]["items"]["items"]["additionalProperties"] is False
    assert spec["properties"]["properties"]["additionalProperties"] is False
    # a map keeps its value schema
    assert spec["properties"]["labels"]["additionalProperties"] == {"type": "string"}
    assert spec["required"] == ["size"]


def test_preserve_unknown_fields_stays_open_but_its_children_are_closed():
    spec = crd_to_schemas(_crd(WIDGET))["widget_v1.json"]["properties"]["spec"]["properties"]
    assert "additionalProperties" not in spec["values"]
    assert "additionalProperties" not in spec["open"]
    assert spec["open"]["properties"]["inner"]["additionalProperties"] is False


def test_int_or_string_becomes_a_type_union():
    port = crd_to_schemas(_crd(WIDGET))["widget_v1.json"]["properties"]["spec"]["properties"]["port"]
    assert port["type"] == ["integer", "string"]
    assert "anyOf" not in port
    assert convert_schema({"type": "string", "format": "int-or-string"}) == {"type": ["integer", "string"]}


def test_nullable_adds_null_to_type_and_enum():
    mode = crd_to_schemas(_crd(WIDGET))["widget_v1.json"]["properties"]["spec"]["properties"]["mode"]
    assert mode["type"] == ["string", "null"]
    assert mode["enum"] == ["a", "b", None]
    assert "nullable" not in mode
    assert convert_schema({"anyOf": [{"type": "integer"}], "nullable": True})["anyOf"][-1] == {"type": "null"}


def test_openapi_boolean_exclusive_bounds_become_draft7_numbers():
    assert convert_schema({"type": "number", "minimum": 0, "exclusiveMinimum": True}) == {
        "type": "number", "exclusiveMinimum": 0,
    }
    assert convert_schema({"type": "number", "maximum": 1, "exclusiveMaximum": False}) == {
        "type": "number", "maximum": 1,
    }


def test_leading_inline_flag_is_moved_before_the_anchor():
    # prometheus-operator's partial_response_strategy pattern; Python's re rejects the original
    out = convert_schema({"type": "string", "pattern": "^(?i)(abort|warn)?$"})
    assert out["pattern"] == "(?i)^(abort|warn)?$"
    assert jsonschema.Draft7Validator(out).is_valid("WARN")
    assert not jsonschema.Draft7Validator(out).is_valid("maybe")


def test_embedded_resource_accepts_type_meta_and_metadata():
    out = convert_schema({
        "type": "object", "x-kubernetes-embedded-resource": True,
        "properties": {"spec": {"type": "object"}},
    })
    assert set(out["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
    assert out["additionalProperties"] is False


def test_top_level_pins_api_version_and_kind_and_closes_metadata():
    schema = crd_to_schemas(_crd(WIDGET))["widget_v1.json"]
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert schema["properties"]["apiVersion"]["enum"] == ["example.com/v1"]
    assert schema["properties"]["kind"]["enum"] == ["Widget"]
    assert schema["required"][:2] == ["apiVersion", "kind"]
    assert schema["properties"]["metadata"] == OBJECT_META
    validator = jsonschema.Draft7Validator(schema)
    ok = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "b"}},
          "spec": {"size": 1, "port": "http", "mode": None, "values": {"anything": [1, {"x": 2}]}}}
    assert list(validator.iter_errors(ok)) == []
    for bad in (
        {**ok, "kind": "Gadget"},
        {**ok, "metadata": {"name": "w", "lables": {}}},
        {**ok, "metadata": {"name": "w", "labels": {"a": 1}}},
        {**ok, "spec": {"size": 1, "sise": 2}},
        {**ok, "spec": {"size": 1, "port": 1.5}},
        {**ok, "spec": {"size": 1, "open": {"inner": {"b": "x"}}}},
        {**ok, "stauts": {}},
    ):
        assert list(validator.iter_errors(bad)), bad


def test_one_file_per_served_version():
    out = crd_to_schemas(_crd(WIDGET, versions=[("v1", True), ("v1beta1", True), ("v1alpha1", False)]))
    assert sorted(out) == ["widget_v1.json", "widget_v1beta1.json"]
    assert out["widget_v1beta1.json"]["properties"]["apiVersion"]["enum"] == ["example.com/v1beta1"]


def test_rejects_what_it_cannot_convert():
    with pytest.raises(SchemaSourceError, match="apiextensions.k8s.io/v1"):
        crd_to_schemas({**_crd(WIDGET), "apiVersion": "apiextensions.k8s.io/v1beta1"})
    with pytest.raises(SchemaSourceError, match="no served version"):
        crd_to_schemas(_crd(WIDGET, versions=[("v1", False)]))
    # YAML 1.1 reads an unquoted `on:` key as True
    with pytest.raises(SchemaSourceError, match="non-string property name"):
        convert_schema(yaml_load("type: object\nproperties:\n  on: {type: string}\n"))


def test_handwritten_source_has_no_metadata():
    out = handwritten_to_schemas({
        "kind": "HandwrittenSchema", "group": "example.config.k8s.io", "version": "v1beta1",
        "schemaKind": "ExampleConfiguration",
        "openAPIV3Schema": {"type": "object", "properties": {"x": {"type": "string"}}},
    })
    schema = out["exampleconfiguration_v1beta1.json"]
    assert "metadata" not in schema["properties"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["apiVersion"]["enum"] == ["example.config.k8s.io/v1beta1"]


def test_write_schemas_checks_vendored_sha(tmp_path):
    body = yaml.safe_dump(_crd(WIDGET))
    good = f"# source: example\n# upstream-sha256: {hashlib.sha256(body.encode()).hexdigest()}\n{HEADER_END}\n"
    (tmp_path / "ok.yaml").write_text(good + body)
    (paths,) = [write_schemas([tmp_path / "ok.yaml"], tmp_path / "out")]
    assert [p.relative_to(tmp_path / "out").as_posix() for p in paths] == ["example.com/widget_v1.json"]
    assert json.loads(paths[0].read_text())["$comment"].endswith("ok.yaml; upstream: example. Do not edit.")
    (tmp_path / "bad.yaml").write_text(good + body.replace("Widget", "Gadget"))
    with pytest.raises(SchemaSourceError, match="vendored file was edited"):
        write_schemas([tmp_path / "bad.yaml"], tmp_path / "out2")


# ------------------------------------------------------------------------------ committed files


def _vendored() -> list[Path]:
    return sorted(p for p in CRD_DIR.glob("*/*.yaml") if "upstream-sha256" in read_source_header(p.read_text()))


def test_vendored_crds_are_byte_for_byte_upstream():
    vendored = _vendored()
    assert {p.relative_to(CRD_DIR).as_posix() for p in vendored} >= {
        "argoproj.io/application-crd.yaml",
    }
    for path in vendored:
        text = path.read_text()
        header = read_source_header(text)
        assert "@" in header["source"], path
        assert hashlib.sha256(vendored_body(text).encode()).hexdigest() == header["upstream-sha256"], path


def _load_generator():
    return load_module(ROOT / "scripts" / "gen_schemas.py", "gen_schemas")


def test_generator_reproduces_committed_schemas_byte_for_byte(tmp_path):
    gen = _load_generator()
    fresh = gen.generate(tmp_path)
    committed = gen.managed_files(SCHEMA_DIR)
    assert fresh == committed, "run scripts/gen_schemas.py"
    for rel in sorted(fresh):
        assert (tmp_path / rel).read_bytes() == (SCHEMA_DIR / rel).read_bytes(), (
            f"policies/schemas/{rel} is stale: run scripts/gen_schemas.py"
        )
    assert {p.as_posix() for p in fresh} >= {
        "argoproj.io/application_v1alpha1.json",
        "monitoring.coreos.com/servicemonitor_v1.json",
        "monitoring.coreos.com/podmonitor_v1.json",
        "monitoring.coreos.com/prometheusrule_v1.json",
        "monitoring.coreos.com/prometheus_v1.json",
        "monitoring.coreos.com/alertmanager_v1.json",
        "kubeflow.org/pytorchjob_v1.json",
        "kubelet.config.k8s.io/kubeletconfiguration_v1beta1.json",
        "kubeadm.k8s.io/joinconfiguration_v1beta3.json",
        "kubeadm.k8s.io/clusterconfiguration_v1beta3.json",
        "kubeproxy.config.k8s.io/kubeproxyconfiguration_v1alpha1.json",
    }
    assert "kubeflow.org/tfjob_v1.json" not in {p.as_posix() for p in fresh}  # colocate/schemagen/tfjob.py's


def _committed_schemas() -> list[Path]:
    """The files scripts/gen_schemas.py owns (policies/schemas/ also holds other modules' files)."""
    return sorted(SCHEMA_DIR / p for p in _load_generator().managed_files(SCHEMA_DIR))


@pytest.mark.parametrize("path", _committed_schemas(), ids=lambda p: p.relative_to(SCHEMA_DIR).as_posix())
def test_committed_schema_is_valid_draft7_with_a_source_comment(path):
    text = path.read_text()
    schema = json.loads(text)
    assert text == dump_schema(schema)
    jsonschema.Draft7Validator.check_schema(schema)
    assert "@" in schema["$comment"] and "Do not edit" in schema["$comment"]


def _fixture_docs(kind: str) -> list[tuple[Path, dict]]:
    return [
        (p, doc)
        for p in sorted((FIXTURES / kind).glob("*.yaml"))
        for doc in yaml_load_all(p.read_text())
        if doc
    ]


def _schema_for(doc: dict) -> Path | None:
    group, _, version = doc["apiVersion"].rpartition("/")
    path = SCHEMA_DIR / group / f"{doc['kind'].lower()}_{version}.json"
    return path if group and path.exists() else None


def test_every_committed_schema_has_a_valid_fixture():
    covered = {_schema_for(doc) for _, doc in _fixture_docs("valid")}
    assert set(_committed_schemas()) <= covered


@pytest.mark.parametrize("kind", ["valid", "invalid"])
def test_python_jsonschema_agrees_on_fixtures(kind):
    for path, doc in _fixture_docs(kind):
        schema_path = _schema_for(doc)
        if schema_path is None:  # core kinds: only kubeconform checks those here
            continue
        errors = list(jsonschema.Draft7Validator(json.loads(schema_path.read_text())).iter_errors(doc))
        assert bool(errors) == (kind == "invalid"), (path.name, [e.message for e in errors])


KUBELET = {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration"}
JOIN = {"apiVersion": "kubeadm.k8s.io/v1beta3", "kind": "JoinConfiguration",
        "discovery": {"file": {"kubeConfigPath": "/etc/kubernetes/discovery.conf"}}}
CLUSTER = {"apiVersion": "kubeadm.k8s.io/v1beta3", "kind": "ClusterConfiguration"}
PROXY = {"apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration"}


def _external_etcd(**fields) -> dict:
    return {**CLUSTER, "etcd": {"external": {"endpoints": ["https://10.0.0.5:2379"], **fields}}}



@pytest.mark.parametrize(
    ("doc", "valid"),
    [
        ({**KUBELET, "systemReserved": {"cpu": "500m", "memory": "4Gi", "pid": "100"}}, True),
        ({**KUBELET, "systemReserved": {"gpu": "1"}}, False),  # "cannot reserve" in the kubelet
        ({**KUBELET, "systemReserved": {"memory": "4 Gi"}}, False),
        ({**KUBELET, "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"}}, True),
        ({**KUBELET, "evictionHard": {"memory.availble": "100Mi"}}, False),
        ({**KUBELET, "reservedSystemCPUs": "0-1,8"}, True),
        ({**KUBELET, "reservedSystemCPUs": "0-1, 8"}, False),
        ({**KUBELET, "syncFrequency": "1m30s"}, True),
        ({**KUBELET, "syncFrequency": "90"}, False),
        ({**KUBELET, "memoryThrottlingFactor": 0}, False),
        ({**KUBELET, "registerWithTaints": [{"key": "online", "effect": "NoSchedule"}]}, True),
        ({**KUBELET, "registerWithTaints": [{"key": "online", "effect": "NoSchedul"}]}, False),
        ({**KUBELET, "metadata": {"name": "mixed"}}, False),  # TypeMeta only
        ({**KUBELET, "apiVersion": "kubelet.config.k8s.io/v1"}, False),
        ({**JOIN, "nodeRegistration": {"taints": None}}, True),
        ({**JOIN, "nodeRegistration": {"taints": []}}, True),
        ({**JOIN, "nodeRegistration": {"name": "Online_1"}}, False),
        ({**JOIN, "discovery": {"timeout": "5m"}}, False),  # neither bootstrapToken nor file
        ({**JOIN, "discovery": {"file": {"kubeConfigPath": "/x"}, "bootstrapToken": {"token": "t"}}}, False),
        ({k: v for k, v in JOIN.items() if k != "discovery"}, False),
        # ClusterConfiguration: each verdict agrees with kubeadm v1.28.15 (strict decoding, then
        # its defaulting and ValidateClusterConfiguration)
        (CLUSTER, True),
        ({**CLUSTER, "metadata": {"name": "cluster"}}, False),  # TypeMeta only
        ({**CLUSTER, "etcd": {"local": {}, "external": {"endpoints": []}}}, False),  # mutually exclusive
        ({**CLUSTER, "etcd": {"local": {"dataDir": ""}}}, True),  # empty: kubeadm's default
        ({**CLUSTER, "etcd": {"local": {"dataDir": "var/lib/etcd"}}}, False),  # not absolute
        ({**CLUSTER, "etcd": {"local": {"peerCertSANs": ["Etcd.local"]}}}, False),
        (_external_etcd(), True),
        ({**CLUSTER, "etcd": {"external": {"endpoints": ["http://10.0.0.5:2379"]}}}, True),  # no TLS files
        ({**CLUSTER, "etcd": {"external": {"endpoints": ["10.0.0.5:2379"]}}}, False),  # no scheme
        (_external_etcd(caFile="/ca.crt", certFile="/etcd.crt", keyFile="/etcd.key"), True),
        (_external_etcd(caFile="", certFile="", keyFile=""), True),  # empty means unset
        (_external_etcd(caFile="/ca.crt", certFile="/etcd.crt"), False),  # cert without key
        (_external_etcd(certFile="/etcd.crt", keyFile="/etcd.key"), False),  # cert and key without CA
        ({**CLUSTER, "etcd": {"external": {"endpoints": ["http://10.0.0.5:2379"], "caFile": "/ca.crt"}}},
         False),  # a TLS file and an http endpoint
        ({**CLUSTER, "apiServer": {"certSANs": ["10.0.0.1", "*.example.com", "fd00::1", "api.example.com"]}}, True),
        ({**CLUSTER, "apiServer": {"certSANs": ["API.example.com"]}}, False),
        ({**CLUSTER, "apiServer": {"timeoutForControlPlane": "4 minutes"}}, False),
        ({**CLUSTER, "controlPlaneEndpoint": "api.example.com:6443"}, True),
        ({**CLUSTER, "controlPlaneEndpoint": "[fd00::1]:6443"}, True),
        ({**CLUSTER, "controlPlaneEndpoint": "10.0.0.1:65536"}, False),
        ({**CLUSTER, "controlPlaneEndpoint": "https://api:6443"}, False),
        ({**CLUSTER, "networking": {"dnsDomain": "Cluster.local"}}, False),
        ({**CLUSTER, "featureGates": {"EtcdLearnerMode": True}}, True),
        ({**CLUSTER, "featureGates": {"NodeSwap": True}}, False),  # a kubelet gate, not kubeadm's
        ({**CLUSTER, "dns": {"type": "CoreDNS"}}, False),  # v1beta2's field
        ({**CLUSTER, "scheduler": {"extraVolumes": [{"name": "a", "hostPath": "/a", "mountPath": "/a",
                                                      "pathType": "Dir"}]}}, False),
        # KubeProxyConfiguration: each verdict agrees with kube-proxy v1.28.15 (strict decoding,
        # then its defaulting and validation on Linux)
        (PROXY, True),
        ({**PROXY, "metricsBindAddress": "0.0.0.0"}, True),  # the default port is appended
        ({**PROXY, "metricsBindAddress": "[::]:10249"}, True),
        ({**PROXY, "metricsBindAddress": "0.0.0.0:99999"}, False),
        ({**PROXY, "metricsBindAddress": "localhost:10249"}, False),  # must be an IP
        ({**PROXY, "healthzBindAddress": "0.0.0.0:0"}, False),
        ({**PROXY, "bindAddress": "0.0.0.0:1"}, False),
        ({**PROXY, "mode": "ipvs"}, True),
        ({**PROXY, "mode": "kernelspace"}, False),  # Windows only
        ({**PROXY, "mode": "userspace"}, False),  # removed in 1.26
        ({**PROXY, "detectLocalMode": "nodeCIDR"}, False),
        ({**PROXY, "oomScoreAdj": -1001}, False),
        ({**PROXY, "iptables": {"masqueradeBit": 32}}, False),
        ({**PROXY, "iptables": {"syncPeriod": "-1s"}}, False),
        ({**PROXY, "conntrack": {"min": -1}}, False),
        ({**PROXY, "clientConnection": {"burst": -1}}, False),
        ({**PROXY, "oomScoreAdj": None, "nodePortAddresses": None, "iptables": {"masqueradeBit": None,
          "localhostNodePorts": None}, "conntrack": {"maxPerCore": None, "min": None,
          "tcpEstablishedTimeout": None, "tcpCloseWaitTimeout": None}, "ipvs": {"excludeCIDRs": None}}, True),
        ({**PROXY, "conntrack": {"tcpCloseWaitTimeout": 3600}}, False),  # a Duration is a string
    ],
)
def test_handwritten_config_schemas(doc, valid):
    schema = json.loads({
        "KubeletConfiguration": SCHEMA_DIR / "kubelet.config.k8s.io" / "kubeletconfiguration_v1beta1.json",
        "JoinConfiguration": SCHEMA_DIR / "kubeadm.k8s.io" / "joinconfiguration_v1beta3.json",
        "ClusterConfiguration": SCHEMA_DIR / "kubeadm.k8s.io" / "clusterconfiguration_v1beta3.json",
        "KubeProxyConfiguration": SCHEMA_DIR / "kubeproxy.config.k8s.io" / "kubeproxyconfiguration_v1alpha1.json",
    }[doc["kind"]].read_text())
    assert jsonschema.Draft7Validator(schema).is_valid(doc) is valid


# ------------------------------------------------------------------------------ core schemas


def test_prepare_core_schemas_makes_local_refs_and_is_idempotent(tmp_path):
    root = prepare_core_schemas(tmp_path, K8S_VERSION)
    folder = root / f"v{K8S_VERSION}-local-strict"
    dep = (folder / "deployment-apps-v1.json").read_text()
    assert '"$id"' not in dep and "_definitions.json" not in dep
    doc = json.loads(dep)
    assert doc["properties"]["spec"]["$ref"] == "#/$defs/io.k8s.api.apps.v1.DeploymentSpec"
    # self-contained: every definition it reaches, and only those, is its own
    refs = set(re.findall(r'"#/\$defs/([^"]+)"', dep))
    assert "io.k8s.api.core.v1.PodSpec" in refs and refs == set(doc["$defs"])
    assert "io.k8s.api.batch.v1.JobSpec" not in doc["$defs"]
    assert (folder / "_definitions.json").is_file()
    before = (folder / "deployment-apps-v1.json").stat().st_mtime_ns
    assert prepare_core_schemas(tmp_path, K8S_VERSION) == root
    assert (folder / "deployment-apps-v1.json").stat().st_mtime_ns == before


# ------------------------------------------------------------------------------ real kubeconform


def _require_kubeconform() -> None:
    # A missing binary is a failure, never a skip: CI without kubeconform must not pass.
    if not KUBECONFORM.is_file():
        pytest.fail(f"kubeconform not found at {KUBECONFORM}: run make bootstrap")


@pytest.fixture(scope="module")
def kubeconform_args(tmp_path_factory) -> list[str]:
    core = prepare_core_schemas(tmp_path_factory.mktemp("k8s-schemas"), K8S_VERSION)
    return [
        str(KUBECONFORM), "-strict", "-summary", "-output", "json", "-kubernetes-version", K8S_VERSION,
        "-schema-location", str(ROOT / CRD_SCHEMA_LOCATION),
        "-schema-location", CORE_SCHEMA_LOCATION.format(root=core),
    ]


def _kubeconform(args: list[str], target: Path) -> dict:
    proc = subprocess.run([*args, str(target)], capture_output=True, text=True, timeout=120, cwd="/")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"kubeconform gave no JSON (rc={proc.returncode}): {proc.stdout}{proc.stderr}")


def test_kubeconform_accepts_valid_fixtures_and_skips_nothing(kubeconform_args):
    _require_kubeconform()
    result = _kubeconform(kubeconform_args, FIXTURES / "valid")
    expected = len(_fixture_docs("valid"))
    assert result["summary"] == {"valid": expected, "invalid": 0, "errors": 0, "skipped": 0}, result


# fixture file -> text kubeconform must report for it
INVALID = {
    "application-unknown-field.yaml": "at '/spec': additional properties 'sourc' not allowed",
    "application-metadata-typo.yaml": "at '/metadata': additional properties 'lables' not allowed",
    "prometheusrule-typo.yaml": "additional properties 'exp' not allowed",
    "servicemonitor-unknown-field.yaml": "additional properties 'intervall' not allowed",
    "kubeletconfiguration-cpumanager-case.yaml": "value must be one of 'none', 'static'",
    "kubeletconfiguration-reserved-number.yaml": "at '/systemReserved/cpu': got number, want string",
    "kubeletconfiguration-unknown-field.yaml": "additional properties 'systemReserverd' not allowed",
    "joinconfiguration-v1beta4-args.yaml": "at '/nodeRegistration/kubeletExtraArgs': got array, want object",
    "clusterconfiguration-unknown-field.yaml": "additional properties 'controllerManger' not allowed",
    "clusterconfiguration-v1beta4-args.yaml": "at '/scheduler/extraArgs': got array, want object",
    "kubeproxyconfiguration-unknown-field.yaml": "additional properties 'metricsBindAdress' not allowed",
    "kubeproxyconfiguration-oomscoreadj-string.yaml": "at '/oomScoreAdj': got string, want null or integer",
    "kubeproxyconfiguration-metrics-no-host.yaml": "at '/metricsBindAddress': ':10249' does not match pattern",
    "deployment-unknown-field.yaml": "additional properties 'resource' not allowed",
}


def test_kubeconform_rejects_each_invalid_fixture(kubeconform_args):
    _require_kubeconform()
    assert sorted(p.name for p in (FIXTURES / "invalid").glob("*.yaml")) == sorted(INVALID)
    result = _kubeconform(kubeconform_args, FIXTURES / "invalid")
    assert result["summary"] == {"valid": 0, "invalid": len(INVALID), "errors": 0, "skipped": 0}, result
    by_file = {Path(r["filename"]).name: r for r in result["resources"]}
    for name, message in INVALID.items():
        assert by_file[name]["status"] == "statusInvalid", by_file[name]
        assert message in by_file[name]["msg"], by_file[name]["msg"]


def test_colocate_check_takes_a_kubeadm_control_plane_file_as_it_is(capsys):
    """ClusterConfiguration and KubeProxyConfiguration are no API objects (NON_API_KINDS): no
    metadata or namespace findings, and kubeconform holds both documents to their schemas."""
    code = cli.main(["check", "--format", "json", str(FIXTURES / "valid" / "kubeadm-control-plane.yaml")])
    result = json.loads(capsys.readouterr().out)
    assert (code, result["findings"]) == (0, []), result
    assert result["kubeconform"] == {"valid": 2, "invalid": 0, "errors": 0, "skipped": 0}

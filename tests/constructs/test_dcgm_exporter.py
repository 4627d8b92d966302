from __future__ import annotations

import cdk8s
import pytest

from colocate.constructs.dcgm_exporter import (
    BASE_FIELDS, CSV_KEY, DcgmExporter, DcgmExporterProps, GpuPool, csv_fields, render_csv)
from colocate.model.pools import Taint
from colocate import ROOT
from colocate.errors import PropError
from tests.helpers import yaml_load

ONLINE_TAINT = Taint("online", "true", "NoSchedule")


def props(**overrides) -> DcgmExporterProps:
    base = dict(namespace="monitoring", gpu_pools=(GpuPool("online", (ONLINE_TAINT,)), GpuPool("mixed")),
                used_fields=(), monitor_labels={"release": "kube-prometheus-stack"})
    return DcgmExporterProps(**{**base, **overrides})


def exporter(**overrides) -> tuple[DcgmExporter, dict]:
    chart = cdk8s.Testing.chart()
    construct = DcgmExporter(chart, "dcgm", props(**overrides))
    return construct, cdk8s.Testing.synth(chart)[0]


def test_csv_is_the_base_set_plus_the_used_fields_typed_from_the_catalog():
    fields = {f.name: f for f in csv_fields(["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"])}
    assert set(BASE_FIELDS) | {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"} <= set(fields)
    assert fields["DCGM_FI_DEV_GPU_UTIL"].type == "gauge"
    assert fields["DCGM_FI_DRIVER_VERSION"].type == "label"


def test_csv_lines_have_exactly_three_comma_separated_fields():
    for line in render_csv(csv_fields(["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"])).splitlines():
        if not line.startswith("#"):
            assert len(line.split(",")) == 3, line


@pytest.mark.parametrize("field, reason", [
    ("DCGM_FI_DEV_GPU_UTILISATION", "not a dcgm-exporter field"),
    ("DCGM_FI_PROF_SM_ACTIVE", "is not exported by dcgm-exporter 3.3.0"),
    ("kube_pod_info", "not a dcgm-exporter field"),
])
def test_a_field_the_pinned_exporter_lacks_is_refused(field, reason):
    with pytest.raises(PropError) as err:
        csv_fields([field])
    assert reason in str(err.value) and field in str(err.value)


def test_configmap_holds_the_csv_and_the_chart_reads_it_with_f():
    construct, config_map = exporter()
    assert config_map["kind"] == "ConfigMap" and "DCGM_FI_DEV_GPU_UTIL, gauge," in config_map["data"][CSV_KEY]
    v = construct.values()
    mount = v["extraVolumeMounts"][0]
    assert v["arguments"] == ["-f", f"{mount['mountPath']}/{CSV_KEY}"] and mount["readOnly"] is True
    assert v["extraConfigMapVolumes"] == [{"name": mount["name"], "configMap": {"name": config_map["metadata"]["name"]}}]


def test_runs_on_every_gpu_pool_including_the_tainted_online_pool():
    v = exporter()[0].values()
    term = v["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [{"key": "node-restriction.kubernetes.io/colocate-pool", "operator": "In", "values": ["mixed", "online"]}]
    assert v["tolerations"] == [ONLINE_TAINT.toleration()]


def test_sys_admin_as_the_chart_ships_it_with_or_without_profiling_fields():
    # The GPU nodes ignore NVIDIA_VISIBLE_DEVICES in unprivileged containers, and the toolkit counts
    # CAP_SYS_ADMIN as privileged: without it the exporter would see no GPU (docs/gpus.md).
    chart = yaml_load((ROOT / "vendor/charts/dcgm-exporter/values.yaml").read_text())["securityContext"]
    for used in ((), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE",)):
        context = exporter(used_fields=used)[0].values()["securityContext"]
        assert context == {"runAsNonRoot": False, "runAsUser": 0, "capabilities": {"add": ["SYS_ADMIN"]}}
        assert context["capabilities"] == chart["capabilities"]


def test_service_monitor_honours_the_exporters_pod_labels_and_carries_the_release_label():
    monitor = exporter()[0].values()["serviceMonitor"]
    assert monitor["honorLabels"] is True and monitor["additionalLabels"] == {"release": "kube-prometheus-stack"}


@pytest.mark.parametrize("overrides, prop", [
    ({"gpu_pools": ()}, "gpu_pools"),
    ({"monitor_labels": {}}, "monitor_labels"),
    ({"image": "nvcr.io/nvidia/k8s/dcgm-exporter"}, "image"),
    ({"used_fields": ("DCGM_FI_DEV_FB_TOTAL",)}, "fields"),
])
def test_bad_props_are_refused_naming_the_prop(overrides, prop):
    with pytest.raises(PropError) as err:
        exporter(**overrides)
    assert err.value.prop == prop


def test_runs_as_a_node_critical_agent_training_cannot_preempt():
    assert exporter()[0].values()["priorityClassName"] == "system-node-critical"


def test_a_counters_change_rolls_the_exporter_through_a_pod_annotation():
    import hashlib

    construct, config_map = exporter()
    annotation = construct.values()["podAnnotations"]["checksum/colocate-counters"]
    assert annotation == hashlib.sha256(config_map["data"][CSV_KEY].encode()).hexdigest()
    more, _ = exporter(used_fields=("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",))
    assert more.values()["podAnnotations"]["checksum/colocate-counters"] != annotation

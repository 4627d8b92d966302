"""The generated cluster's behaviour defects an expert found, each written into a copy
of dist/ as a user would write it by hand: `colocate check` names the file and the rule (MISTAKES
as errors, WARNINGS as warnings)."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest
import yaml

from colocate import ROOT, checker
from tests.helpers import yaml_load_all

DIST = ROOT / "dist"


def _edit(path: Path, change: Callable[[dict], None]) -> None:
    docs = list(yaml_load_all(path.read_text()))
    change(docs[0])
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _no_device_specs(daemonset: dict) -> None:
    container = daemonset["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != "PASS_DEVICE_SPECS"]


def _ps_sees_every_gpu(tfjob: dict) -> None:
    env = tfjob["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0]["env"]
    env[:] = [e for e in env if e["name"] != "NVIDIA_VISIBLE_DEVICES"]


def _cpu_chief_beside_gpu_workers(tfjob: dict) -> None:
    container = tfjob["spec"]["tfReplicaSpecs"]["Chief"]["template"]["spec"]["containers"][0]
    del container["resources"]["limits"]["nvidia.com/gpu"]
    container["env"].append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"})  # as COL070 asks of a CPU replica


def _scheduler_on_loopback(config: dict) -> None:
    config["scheduler"]["extraArgs"]["bind-address"] = "127.0.0.1"


MISTAKES = [
    # a CPU-only parameter server of a CUDA image sees every GPU of its node
    ("apps/training/tfjob.training.tf-ps-mode.yaml", _ps_sees_every_gpu, "COL070"),
    # the device plugin without device specs under the static CPU manager
    ("apps/nvidia-device-plugin/daemonset.kube-system.nvidia-device-plugin.yaml", _no_device_specs, "COL071"),
    # kubeadm's loopback default for the scheduler while Prometheus scrapes it
    ("control-plane/clusterconfiguration.yaml", _scheduler_on_loopback, "COL222"),
    ("control-plane/kubeproxyconfiguration.yaml", lambda c: c.pop("metricsBindAddress"), "COL222"),
    # Prometheus' TSDB on the checkpoints' NFS class
    ("apps/kube-prometheus-stack/prometheus.monitoring.kube-prometheus-stack-prometheus.yaml",
     lambda prometheus: prometheus["spec"]["storage"]["volumeClaimTemplate"]["spec"].update(
         storageClassName="nfs-client"), "COL223"),
]


MISTAKES += [
    # all-reduce with a CPU Chief beside GPU Workers; parameter-server training without a coordinator
    ("apps/training/tfjob.training.tf-mnist-dist.yaml", _cpu_chief_beside_gpu_workers, "COL116"),
    ("apps/training/tfjob.training.recsys-train.yaml", lambda job: job["spec"]["tfReplicaSpecs"].pop("Chief"), "COL117"),
    # the offline tier preempting the class-less add-ons of the mixed pool
    ("apps/platform/priorityclass.offline-batch.yaml", lambda pc: pc.update(preemptionPolicy="PreemptLowerPriority"),
     "COL012"),
    # a TFJob name the API server takes and training-operator v1.7.0 refuses
    ("apps/training/tfjob.training.tf-ps-mode.yaml", lambda job: job["metadata"].update(name="1abc"), "COL115"),
]
#: Warnings (the GitOps rules): check still exits 0, but names the file and the rule.
WARNINGS = [
    # a kept claim that holds its Application OutOfSync once its job file is deleted
    ("apps/training/persistentvolumeclaim.training.tf-ps-mode-checkpoints.yaml",
     lambda claim: claim["metadata"]["annotations"].pop("argocd.argoproj.io/compare-options"), "COL300"),
    # a guard deleted with the platform Application
    ("apps/platform/networkpolicy.training.default-deny.yaml",
     lambda policy: policy["metadata"].pop("annotations"), "COL307"),
    ("apps/platform/priorityclass.online-high.yaml", lambda pc: pc["metadata"].pop("annotations"), "COL307"),
]


def _checked_with(tmp_path: Path, file: str, change: Callable[[dict], None]) -> tuple[Path, checker.CheckResult]:
    """check of a copy of dist/ with ``file`` changed."""
    copy = tmp_path / "dist"
    shutil.copytree(DIST, copy)
    _edit(copy / file, change)
    return copy, checker.check([copy])


@pytest.mark.parametrize("file, change, rule", WARNINGS, ids=[f"{r}:{f}" for f, _, r in WARNINGS])
def test_check_warns_about_the_gitops_mistake_written_by_hand(tmp_path, file, change, rule):
    copy, result = _checked_with(tmp_path, file, change)
    assert [(f.rule, f.file) for f in result.findings] == [(rule, str(copy / file))], \
        [(f.rule, f.file) for f in result.findings]


@pytest.mark.parametrize("file, change, rule", MISTAKES, ids=[f"{r}:{f}" for f, _, r in MISTAKES])
def test_check_catches_the_mistake_written_by_hand(tmp_path, file, change, rule):
    copy, result = _checked_with(tmp_path, file, change)
    found = [f for f in result.findings if f.rule == rule]
    assert found and all(f.file == str(copy / file) for f in found), [(f.rule, f.file) for f in result.findings]
    assert result.errors and {f.rule for f in result.errors} == {rule}, [(f.rule, f.file) for f in result.errors]


def test_the_unedited_copy_is_clean(tmp_path):
    copy = tmp_path / "dist"
    shutil.copytree(DIST, copy)
    assert checker.check([copy]).findings == []

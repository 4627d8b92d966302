"""The node files reach the kubelet: the patch folder and file name are what kubeadm reads."""
from __future__ import annotations

import re
import tomllib

import pytest

from colocate import ROOT
from colocate.constructs.node_pool import GPU_TOOLKIT_FILE, GPU_UDEV_RULE_FILE
from colocate.model.pools import KUBELET_PATCH_FILE, PATCHES_DIR, UPGRADE_COMMAND
from tests.helpers import yaml_load

NODES = ROOT / "dist" / "nodes"
# kubernetes/kubernetes cmd/kubeadm/app/util/patches/patches.go (parseFilename): the extension
# must be yaml or json, then ^(<target>)([^.+\n]*)?(\+)?(json|merge|strategic)?; a '+' without
# a known patch type is an error.
_EXTENSION = re.compile(r".+\.(json|yaml)$")
_NAME = re.compile(r"^(etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubeletconfiguration)"
                   r"([^.+\n]*)?(\+)?(json|merge|strategic)?")


def _kubeadm_target(file_name: str) -> tuple[str, str] | None:
    if not _EXTENSION.match(file_name):
        return None
    match = _NAME.match(file_name)
    if not match:
        return None
    if match.group(3) and not match.group(4):
        raise ValueError(f"{file_name}: unknown or missing patch type after '+'")
    return match.group(1), match.group(4) or "strategic"


@pytest.mark.parametrize("pool", sorted(p.name for p in NODES.iterdir()))
def test_each_pool_joins_with_the_patch_folder_the_docs_name(pool):
    join = yaml_load((NODES / pool / "joinconfiguration.yaml").read_text())
    assert join["patches"]["directory"] == PATCHES_DIR
    kubelet = yaml_load((NODES / pool / "kubeletconfiguration.yaml").read_text())
    assert kubelet["kind"] == "KubeletConfiguration"


def test_the_kubelet_patch_file_name_is_a_strategic_kubeletconfiguration_patch():
    assert _kubeadm_target(KUBELET_PATCH_FILE) == ("kubeletconfiguration", "strategic")
    # The grammar rejects what it should: a wrong target is ignored, a bad patch type is an error.
    assert _kubeadm_target("kubelet-config+strategic.yaml") is None
    assert _kubeadm_target("kubeletconfiguration.txt") is None
    with pytest.raises(ValueError):
        _kubeadm_target("kubeletconfiguration+smart.yaml")


def test_the_docs_give_the_exact_join_and_upgrade_commands():
    # docs/node-pools.md holds the commands; docs/dist.md, where a newcomer reads about dist/nodes/,
    # sends the reader there.
    docs = (ROOT / "docs" / "node-pools.md").read_text()
    commands = [line.split("#")[0].strip() for line in docs.splitlines()]
    assert f"install -D kubeletconfiguration.yaml {PATCHES_DIR}/{KUBELET_PATCH_FILE}" in commands
    assert "kubeadm join --config joinconfiguration.yaml" in commands
    assert UPGRADE_COMMAND in commands
    assert "(node-pools.md#joining-and-upgrading)" in (ROOT / "docs" / "dist.md").read_text()


@pytest.mark.parametrize("pool", sorted(p.name for p in NODES.iterdir()))
def test_gpu_pools_and_only_they_carry_the_dev_char_udev_rule(pool):
    # GPU containers keep /dev/nvidia* under the static CPU manager only if runc finds the
    # devices under /dev/char (docs/gpus.md, "Static CPU manager").
    description = yaml_load((NODES / pool / f"nodepool.{pool}.yaml").read_text())
    has_gpus = bool(description["spec"]["capacity"].get("nvidia.com/gpu"))
    rule = NODES / pool / GPU_UDEV_RULE_FILE
    assert rule.is_file() == has_gpus
    if has_gpus:
        line = next(text for text in rule.read_text().splitlines() if text and not text.startswith("#"))
        assert line == ('ACTION=="add", DEVPATH=="/bus/pci/drivers/nvidia", '
                        'RUN+="/usr/bin/nvidia-ctk system create-dev-char-symlinks --create-all"')
        docs = (ROOT / "docs" / "node-pools.md").read_text()
        assert f"install -m 0644 {GPU_UDEV_RULE_FILE} /lib/udev/rules.d/" in docs


@pytest.mark.parametrize("pool", sorted(p.name for p in NODES.iterdir()))
def test_gpu_nodes_take_gpus_from_the_device_plugins_volume_mounts_never_from_a_pods_env(pool):
    """Defence in depth behind COL070 (docs/gpus.md): the toolkit ignores NVIDIA_VISIBLE_DEVICES in
    unprivileged containers and reads the device plugin's volume mounts, which the plugin writes."""
    description = yaml_load((NODES / pool / f"nodepool.{pool}.yaml").read_text())
    has_gpus = bool(description["spec"]["capacity"].get("nvidia.com/gpu"))
    settings = NODES / pool / GPU_TOOLKIT_FILE
    assert settings.is_file() == has_gpus
    if has_gpus:
        assert tomllib.loads(settings.read_text()) == {
            "accept-nvidia-visible-devices-envvar-when-unprivileged": False,
            "accept-nvidia-visible-devices-as-volume-mounts": True}
        assert f"{GPU_TOOLKIT_FILE}" in (ROOT / "docs" / "node-pools.md").read_text()
        plugin = yaml_load((ROOT / "dist/apps/nvidia-device-plugin/daemonset.kube-system.nvidia-device-plugin.yaml").read_text())
        env = {e["name"]: e.get("value") for c in plugin["spec"]["template"]["spec"]["containers"] for e in c.get("env", [])}
        assert env["DEVICE_LIST_STRATEGY"] == "volume-mounts"

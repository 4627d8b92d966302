"""How the simulation reaches Kueue's webhooks from the API server (colocate/simulate/kueue.py,
docs/simulate.md "Kueue"), without running it: the release's in-cluster webhook configurations,
as kustomize renders vendor/kueue/config/default, are pointed at the host process by URL, every
hook of them; the ones the simulation registers itself have the same rules; the certificate is
one the API server can verify for https://127.0.0.1. Running Kueue: tests/simulate/test_kueue.py."""
from __future__ import annotations

import base64
import dataclasses
import subprocess

import pytest

from colocate import config
from colocate.base import vendored
from colocate.errors import InputError
from colocate.simulate import kueue, toolchain
from colocate.simulate.toolchain import BIN
from tests.helpers import yaml_load_all

URL = "https://127.0.0.1:10443"


@pytest.fixture(scope="module")
def ca(tmp_path_factory) -> tuple[bytes, object]:
    folder = tmp_path_factory.mktemp("kueue-certs")
    return kueue.make_certificates(folder), folder


@pytest.fixture(scope="module")
def rendered() -> str:
    """The release's install (config/default) as kustomize renders it."""
    kustomize = BIN / "kustomize"
    assert kustomize.is_file(), "bin/kustomize is missing: python -m colocate.synth.renderers builds it"
    return subprocess.run([str(kustomize), "build", str(kueue.tree() / "default")], capture_output=True, text=True,
                          check=True).stdout


@pytest.fixture
def in_cluster(rendered) -> dict[str, dict]:
    """Its webhook configurations, by kind (parsed anew for each test: the tests change them)."""
    return {d["kind"]: d for d in yaml_load_all(rendered) if d and d["kind"] in kueue.WEBHOOK_KINDS}


def test_every_in_cluster_hook_is_pointed_at_the_host_process(in_cluster, ca):
    ca_pem, _ = ca
    assert set(in_cluster) == set(kueue.WEBHOOK_KINDS)
    for doc in in_cluster.values():
        hooks = doc["webhooks"]
        paths = [h["clientConfig"]["service"]["path"] for h in hooks]
        assert kueue.served_by_host(doc, URL, ca_pem)
        assert [h["clientConfig"] for h in hooks] == [
            {"url": f"{URL}{p}", "caBundle": base64.b64encode(ca_pem).decode()} for p in paths]
        assert not kueue.served_by_host(doc, URL, ca_pem)  # nothing left that calls the Service


def test_another_service_is_left_alone(in_cluster, ca):
    doc = in_cluster["MutatingWebhookConfiguration"]
    doc["webhooks"] = [dict(doc["webhooks"][0], clientConfig={"service": {
        "name": "kueue-webhook-service", "namespace": "elsewhere", "path": "/x"}})]
    assert not kueue.served_by_host(doc, URL, ca[0])


def test_the_registered_hooks_are_the_releases_for_kueue_kinds_and_tfjobs(in_cluster, ca):
    ca_pem, _ = ca
    cluster = {d["metadata"]["name"]: {h["name"]: h for h in d["webhooks"]} for d in in_cluster.values()}
    registered = kueue.webhook_configurations(URL, ca_pem)
    assert {d["metadata"]["name"] for d in registered} == set(cluster)
    names = set()
    for doc in registered:
        for hook in doc["webhooks"]:
            names.add(hook["name"])
            theirs = cluster[doc["metadata"]["name"]][hook["name"]]
            assert {k: v for k, v in hook.items() if k != "clientConfig"} == \
                   {k: v for k, v in theirs.items() if k != "clientConfig"}, hook["name"]
            assert hook["clientConfig"]["url"] == URL + theirs["clientConfig"]["service"]["path"]
    assert {"mtfjob.kb.io", "vtfjob.kb.io", "mworkload.kb.io", "vworkload.kb.io", "mclusterqueue.kb.io",
            "vclusterqueue.kb.io", "mresourceflavor.kb.io", "vresourceflavor.kb.io", "vcohort.kb.io"} == names
    # Kueue answers a disabled framework's hook with a no-op; a Fail hook on every pod is left out.
    assert {"mpod.kb.io", "vpod.kb.io", "mjob.kb.io", "mpytorchjob.kb.io"} <= {n for d in cluster.values() for n in d}


def test_the_certificate_is_for_127_0_0_1_and_signed_by_the_ca(ca):
    ca_pem, folder = ca
    assert ca_pem == (folder / "ca.crt").read_bytes()
    verify = subprocess.run(["openssl", "verify", "-CAfile", str(folder / "ca.crt"), "-purpose", "sslserver",
                             "-verify_ip", "127.0.0.1", str(folder / "tls.crt")], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    wrong = subprocess.run(["openssl", "verify", "-CAfile", str(folder / "ca.crt"), "-verify_ip", "10.0.0.1",
                            str(folder / "tls.crt")], capture_output=True, text=True)
    assert wrong.returncode != 0
    assert (folder / "tls.key").is_file()


def test_the_toolchain_builds_the_pinned_release_only_when_colocate_yaml_has_kueue():
    cfg = config.load()
    (build,) = [b for b in toolchain.builds(cfg) if b.name == "kueue"]
    commit = vendored.load()["kueue"].commit
    assert (build.module, build.version, build.binaries) == ("sigs.k8s.io/kueue", cfg.kueue.version, ("kueue",))
    assert f"-X sigs.k8s.io/kueue/pkg/version.GitCommit={commit}" in build.ldflags
    assert "kueue" not in {b.name for b in toolchain.builds(dataclasses.replace(cfg, kueue=None))}
    other = dataclasses.replace(cfg, kueue=dataclasses.replace(cfg.kueue, version="v0.10.2"))
    with pytest.raises(InputError, match=r"\$\.kueue\.version.*vendor/sources.yaml has kueue at v0.10.6"):
        toolchain.builds(other)


def test_the_host_manager_admits_as_dist_s_manager_does(tmp_path):
    """The simulation's Configuration differs from dist/'s only where a host process must (ports,
    certificates, leader election, the scaled timeouts): which jobs are Kueue's and how they are
    admitted are the same."""
    from colocate.charts.kueue import manager_configuration

    cfg = config.load()
    ours = kueue.configuration(cfg.kueue, namespace="kueue-system", metrics_port=1, health_port=2, webhook_port=3,
                               cert_dir=tmp_path)
    theirs = manager_configuration(cfg)
    for key in ("manageJobsWithoutQueueName", "integrations"):
        assert ours[key] == theirs[key], key
    for key in ("enable", "blockAdmission"):
        assert ours["waitForPodsReady"][key] == theirs["waitForPodsReady"][key], key
    assert ours["waitForPodsReady"]["requeuingStrategy"]["timestamp"] == \
        theirs["waitForPodsReady"]["requeuingStrategy"]["timestamp"]

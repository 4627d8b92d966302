"""Kueue in the simulation: the real manager (``sigs.k8s.io/kueue/cmd/kueue`` at colocate.yaml
``kueue.version``) as a host process on 127.0.0.1, like the training-operator.

What the in-cluster install gets from its Deployment and Service has to be made here
(docs/simulate.md, "Kueue"):

- a Configuration file: the frameworks colocate queues, waitForPodsReady with colocate.yaml's
  timeout scaled as the simulation scales time, no leader election, metrics and probes on free
  loopback ports, and no visibility server (it needs an in-cluster config and exits without one);
- the webhook's serving certificate: a throw-away CA and a certificate for IP 127.0.0.1, since
  Kueue's own certificate management makes one for ``kueue-webhook-service.<ns>.svc``;
- webhook configurations the API server can reach: the vendored ones
  (``config/components/webhook/manifests.yaml``) for Kueue's own kinds and the enabled frameworks,
  with ``clientConfig.url: https://127.0.0.1:<port><path>`` and the CA, where the cluster's name
  the Service (:func:`served_by_host` rewrites those in Argo CD's repository copy)."""
from __future__ import annotations

import base64
import copy
import functools
import json
import shutil
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colocate import config as config_mod
from colocate.base import safe_yaml, vendored
from colocate.simulate.local_cluster import ControlPlane, SimulationError, free_port, refusal

GROUP = "kueue.x-k8s.io"
#: The job kinds colocate queues (Kueue's integration names; its default is batch/job only,
#: kueue v0.10.6 apis/config/v1beta1/defaults.go defaultJobFrameworkName).
FRAMEWORKS = ("kubeflow.org/tfjob",)
#: The simulation's time is the cluster's divided by this: the resubmitter's first backoff is
#: 1 s instead of 30 s (components.SIM_SETTINGS), so waitForPodsReady's 600 s become 20 s.
TIME_SCALE = 30
#: Off, and why: kueue v0.10.6 pkg/visibility/server.go builds its API server from
#: rest.InClusterConfig() and calls os.Exit(1) out of a cluster.
FEATURE_GATES = {"VisibilityOnDemand": False}
READY_TIMEOUT = 60.0
WEBHOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def tree() -> Path:
    """vendor/kueue/config: the release's kustomize tree (vendor/sources.yaml ``kueue``)."""
    return vendored.load()["kueue"].root


def crds() -> list[dict[str, Any]]:
    """Kueue's CRDs as the release ships them (config/components/crd/bases). Workloads' is over
    256 KiB: apply them server-side (ControlPlane.apply), never with last-applied-configuration."""
    return [safe_yaml.load(f.read_text()) for f in sorted((tree() / "components" / "crd" / "bases").glob("*.yaml"))]


def crds_served(cp: ControlPlane) -> bool:
    """Every kind of the release is served (read from discovery, cheap enough for each tick of a
    wait): Kueue sets up indexes and informers for its kinds before its manager starts, and exits
    when one is not served."""
    for group_version, plurals in _kinds().items():
        try:
            found = {r["name"] for r in cp.request("GET", f"/apis/{group_version}")["resources"]}
        except urllib.error.HTTPError:
            return False
        if not plurals <= found:
            return False
    return True


@functools.cache
def _kinds() -> dict[str, frozenset[str]]:
    """``group/version`` -> the plurals the release's CRDs serve there (parsed once: 0.7 MB)."""
    wanted: dict[str, set[str]] = {}
    for crd in crds():
        for version in crd["spec"]["versions"]:
            if version.get("served", True):
                wanted.setdefault(f"{crd['spec']['group']}/{version['name']}", set()).add(crd["spec"]["names"]["plural"])
    return {k: frozenset(v) for k, v in wanted.items()}


def pods_ready_timeout(cfg: config_mod.Kueue) -> int:
    return max(1, round(cfg.pods_ready_timeout_seconds / TIME_SCALE))


def configuration(cfg: config_mod.Kueue, *, namespace: str, metrics_port: int, health_port: int,
                  webhook_port: int, cert_dir: Path) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta1, kueue v0.10.6
    apis/config/v1beta1/configuration_types.go) for a host process."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
        "namespace": namespace,
        # As dist/'s (charts/kueue.py manager_configuration; tests/test_simulate_kueue.py holds
        # them equal): a TFJob without a queue label is suspended, never started outside the queue.
        "manageJobsWithoutQueueName": True,
        "leaderElection": {"leaderElect": False},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}", "enableClusterQueueResources": True},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        # Else Kueue makes a certificate for kueue-webhook-service.<ns>.svc and patches it into the
        # in-cluster webhook configurations (kueue v0.10.6 pkg/util/cert/cert.go).
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 50, "burst": 100},
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "waitForPodsReady": {
            "enable": True, "timeout": f"{pods_ready_timeout(cfg)}s", "blockAdmission": True,
            # The requeue backoff after an eviction, scaled like the timeout (defaults 60 s, 3600 s).
            "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": max(1, 60 // TIME_SCALE),
                                  "backoffMaxSeconds": 3600 // TIME_SCALE}},
        "featureGates": dict(FEATURE_GATES),
    }


def make_certificates(folder: Path) -> bytes:
    """A throw-away CA and, signed by it, tls.crt/tls.key for IP 127.0.0.1 (controller-runtime's
    default file names in webhook.certDir); the CA's PEM, for the webhooks' caBundle."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", folder / "ca.key", "-out", folder / "ca.crt", "-days", "2",
             "-subj", "/CN=colocate-simulate-kueue-ca",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    _openssl("req", *ec, "-keyout", folder / "tls.key", "-out", folder / "tls.csr", "-subj", "/CN=127.0.0.1")
    extensions = folder / "tls.ext"
    extensions.write_text("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
                          "keyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", folder / "tls.csr", "-CA", folder / "ca.crt", "-CAkey", folder / "ca.key",
             "-CAcreateserial", "-days", "2", "-extfile", extensions, "-out", folder / "tls.crt")
    return (folder / "ca.crt").read_bytes()


def _openssl(*args) -> None:
    result = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        raise SimulationError(f"openssl {args[0]} for Kueue's webhook certificate failed: {result.stderr.strip()}")


def _wanted(hook: dict[str, Any], frameworks: tuple[str, ...]) -> bool:
    """A webhook on Kueue's own kinds, or on the kind of an enabled framework (``<group>/<kind>``,
    resource ``<kind>s``; ``pod`` has the core group). The other frameworks' are left out: Kueue
    answers them with a no-op, and a Fail hook on every pod would stop pods whenever Kueue is down."""
    served = {(f.rpartition("/")[0], f.rpartition("/")[2] + "s") for f in frameworks}
    rules = hook.get("rules") or []
    return bool(rules) and all(
        set(r.get("apiGroups") or []) == {GROUP}
        or all((g, res) in served for g in r.get("apiGroups") or [] for res in r.get("resources") or [])
        for r in rules)


def _kustomize_names() -> tuple[str, str]:
    """config/default's namespace and namePrefix: what the in-cluster objects are called."""
    default = safe_yaml.load((tree() / "default" / "kustomization.yaml").read_text())
    return default["namespace"], default.get("namePrefix", "")


def _webhook_service() -> str:
    """The in-cluster name of the Service the release's webhooks call."""
    service = safe_yaml.load((tree() / "components" / "webhook" / "service.yaml").read_text())
    return _kustomize_names()[1] + service["metadata"]["name"]


def webhook_configurations(url: str, ca_pem: bytes, frameworks: tuple[str, ...] = FRAMEWORKS) -> list[dict[str, Any]]:
    """The release's webhook configurations (config/components/webhook/manifests.yaml), named as
    config/default names them, with the hooks of Kueue's kinds and ``frameworks`` only, each
    reaching ``url`` + its path with the CA ``ca_pem``."""
    _, prefix = _kustomize_names()
    out = []
    manifests = tree() / "components" / "webhook" / "manifests.yaml"
    for doc in safe_yaml.load_all(manifests.read_text()):
        if not isinstance(doc, dict) or doc.get("kind") not in WEBHOOK_KINDS:
            continue
        hooks = []
        for hook in doc.get("webhooks") or []:
            if _wanted(hook, frameworks):
                hook = copy.deepcopy(hook)
                hook["clientConfig"] = _by_url(hook["clientConfig"], url, ca_pem)
                hooks.append(hook)
        if hooks:
            out.append({"apiVersion": doc["apiVersion"], "kind": doc["kind"],
                        "metadata": {"name": prefix + doc["metadata"]["name"]}, "webhooks": hooks})
    return out


def _by_url(client_config: dict[str, Any], url: str, ca_pem: bytes) -> dict[str, Any]:
    path = (client_config.get("service") or {}).get("path") or ""
    return {"url": f"{url}{path}", "caBundle": base64.b64encode(ca_pem).decode()}


def served_by_host(doc: dict[str, Any], url: str, ca_pem: bytes) -> bool:
    """Point the in-cluster webhook configuration ``doc`` at the host process, in place, when its
    hooks call Kueue's Service (``<prefix>webhook-service`` in config/default's namespace): a
    Service has no endpoint a process on 127.0.0.1 can serve. True when it did."""
    if doc.get("kind") not in WEBHOOK_KINDS:
        return False
    namespace, _ = _kustomize_names()
    changed = False
    for hook in doc.get("webhooks") or []:
        service = (hook.get("clientConfig") or {}).get("service") or {}
        if service.get("name") == _webhook_service() and service.get("namespace") == namespace:
            hook["clientConfig"] = _by_url(hook["clientConfig"], url, ca_pem)
            changed = True
    return changed


@dataclass
class Kueue:
    """Kueue's manager for one ControlPlane: made with its ports, certificate and Configuration (in
    the run's folder), so that dist/'s webhook configurations can name it before it runs; then
    ``start`` it once its CRDs are served."""

    cp: ControlPlane
    cfg: config_mod.Kueue
    #: A kept base's certs/ (colocate.simulate.kept): the CA its webhook configurations name.
    kept_certs: Path | None = None
    folder: Path = field(init=False)
    ports: dict[str, int] = field(init=False)
    ca_pem: bytes = field(init=False)
    started: bool = False
    #: The in-cluster webhook configurations of dist/ pointed at this process (Argo CD's copy).
    rewritten: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.folder = self.cp.workdir / "kueue"
        self.ports = {name: free_port() for name in ("metrics", "health", "webhook")}
        if self.kept_certs:
            shutil.copytree(self.kept_certs, self.folder / "certs")
            self.ca_pem = (self.folder / "certs" / "ca.crt").read_bytes()
        else:
            self.ca_pem = make_certificates(self.folder / "certs")
        namespace, _ = _kustomize_names()
        conf = configuration(self.cfg, namespace=namespace, metrics_port=self.ports["metrics"],
                             health_port=self.ports["health"], webhook_port=self.ports["webhook"],
                             cert_dir=self.folder / "certs")
        (self.folder / "configuration.yaml").write_text(json.dumps(conf, indent=1))

    @property
    def namespace(self) -> str:
        return _kustomize_names()[0]

    @property
    def service(self) -> str:
        return _webhook_service()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ports['webhook']}"

    def rewrite(self, doc: dict[str, Any]) -> bool:
        """For Argo CD's repository copy: dist/'s webhook configurations call this process by URL."""
        if served_by_host(doc, self.url, self.ca_pem):
            self.rewritten.append(f"{doc['kind']}/{doc['metadata']['name']}")
            return True
        return False

    def repoint(self, old_url: str) -> None:
        """On a kept base: the webhook configurations etcd holds call this process's port, not the
        one the base's run gave Kueue (what kept.py restores names the old one)."""
        for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            path = f"/apis/admissionregistration.k8s.io/v1/{kind}"
            for obj in self.cp.items(path):
                old = json.dumps(obj["webhooks"])
                if old_url in old:
                    self.cp.request("PATCH", f"{path}/{obj['metadata']['name']}",
                                    {"webhooks": json.loads(old.replace(old_url, self.url))},
                                    content_type="application/merge-patch+json")

    def start_when_served(self) -> None:
        """Start once Argo CD has installed every Kueue CRD (a tick of the sync's wait), with
        the host's webhook configurations only if dist/ carries none."""
        if not self.started and crds_served(self.cp):
            self.start(register_webhooks=not self.rewritten)

    def start(self, register_webhooks: bool = True) -> None:
        """Run the manager, wait until /readyz passes (its webhook server serves), then register
        the webhook configurations (``register_webhooks``: when no dist/ brings them)."""
        self.cp.run("kueue", [str(self.cp.binaries["kueue"]), f"--config={self.folder / 'configuration.yaml'}",
                              f"--kubeconfig={self.cp.kubeconfig}"])
        self.started = True
        self.cp.metrics["kueue"] = f"http://127.0.0.1:{self.ports['metrics']}/metrics"
        self._wait_ready()
        if register_webhooks:
            for obj in webhook_configurations(self.url, self.ca_pem):
                try:
                    self.cp.apply(obj)
                except urllib.error.HTTPError as exc:
                    raise SimulationError(f"Kueue's {obj['kind']} {obj['metadata']['name']}: {refusal(exc)}") from None

    def _wait_ready(self) -> None:
        def readyz() -> None:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ports['health']}/readyz", timeout=5):
                pass
        self.cp.wait_ready("kueue", readyz, READY_TIMEOUT, 0.3)

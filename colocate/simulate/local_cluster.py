"""A Kubernetes control plane of the real components on 127.0.0.1, in a temporary folder.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler run with the flags kubeadm 1.28
gives them where they matter to the simulation (admission plugins, privileged containers,
authorization); ports are free ones, and every process started here is stopped on exit, on error
and on Ctrl-C (docs/simulate.md)."""
from __future__ import annotations

import ctypes
import json
import os
import random
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from colocate.rules.admission import API_SERVER_FLAGS, CONTROLLER_MANAGER_FLAGS
from colocate.errors import ColocateError

#: kubeadm 1.28 adds NodeRestriction to the API server's default admission plugins
#: (kubernetes v1.28.15 cmd/kubeadm/app/phases/controlplane/manifests.go getAPIServerCommand).
KUBEADM_ADMISSION_PLUGINS = "NodeRestriction"
SERVICE_CIDR = "10.96.0.0/12"
READY_TIMEOUT = 60.0
#: The Go collector's target for every component unless the caller's environment sets GOGC: a
#: run is CPU-bound on 2 cores (kube-apiserver and Argo CD's controller decode and encode the
#: charts' CRDs for each apply), and collecting a quarter as often takes about a seventh off a
#: night run for 2.4 times the memory of the largest process (docs/simulate.md, "How a run goes").
GOGC = "400"


class SimulationError(ColocateError):
    """A component failed to start or answer; the message says which and where its log is."""


#: Ports this process has handed out: a port is given to one component only, even after the
#: probe that found it free has closed.
_GIVEN: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections (Linux's default if unread)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A port nothing listens on, for a component to bind soon after. Taken below the kernel's
    ephemeral range: a port the kernel picks for bind(0) is one it also picks for the clients'
    outgoing connections, and one did take kube-controller-manager's between this answer and its
    bind ("bind: address already in use"). Probed on all addresses, as some components bind."""
    low, high = _ephemeral_range()
    first, last = (10000, low - 1) if low > 12000 else (high + 1, 65535)
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randint(first, last)
        if port in _GIVEN:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("0.0.0.0", port))
            except OSError:
                continue
        _GIVEN.add(port)
        return port
    raise SimulationError(f"no free TCP port found between {first} and {last}")


class ControlPlane:
    """``with ControlPlane(binaries) as cp:`` a running API server at ``cp.server``, reachable
    with ``cp.kubeconfig``; ``cp.run`` starts more processes that are stopped with it."""

    def __init__(self, binaries: dict[str, Path], keep_logs: bool = False, restore: Path | None = None):
        """``restore``: a kept base's folder (colocate.simulate.kept): its etcd snapshot is restored
        and its ``pki/`` reused, so that the service account tokens etcd holds stay valid."""
        self.binaries = binaries
        self.keep_logs = keep_logs
        self.restore = restore
        self.workdir = Path(tempfile.mkdtemp(prefix="colocate-simulate-"))
        self.logs = self.workdir / "logs"
        self.logs.mkdir()
        self.token = (restore / "pki" / "tokens.csv").read_text().split(",")[0] if restore else secrets.token_hex(16)
        self.etcd_url = ""
        self.port = free_port()
        self.server = f"https://127.0.0.1:{self.port}"
        self.kubeconfig = self.workdir / "kubeconfig"
        self.processes: list[tuple[str, subprocess.Popen]] = []
        self.failed = False
        #: Each component's /metrics URL (the metric catalog's importer reads them).
        self.metrics: dict[str, str] = {}
        #: (apiVersion, kind) -> (REST path of the collection, namespaced), from discovery.
        self._resources: dict[tuple[str, str], tuple[str, bool]] = {}

    # --- processes ---------------------------------------------------------------------------
    def run(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start a process in its own process group, its output in logs/<name>.log."""
        log = open(self.logs / f"{name}.log", "wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=self.workdir, env={"GOGC": GOGC, **os.environ, **(env or {})},
                                start_new_session=True,
                                preexec_fn=_die_with_parent)
        log.close()
        self.processes.append((name, proc))
        return proc

    def check_alive(self) -> None:
        for name, proc in self.processes:
            if proc.poll() is not None:
                raise SimulationError(f"{name} exited with code {proc.returncode}; its log is "
                                      f"{self.logs / (name + '.log')}:\n{self.tail(name)}")

    def tail(self, name: str, lines: int = 15) -> str:
        text = (self.logs / f"{name}.log").read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """SIGTERM every process group, newest first, then SIGKILL what is left after 5 s."""
        for _, proc in reversed(self.processes):
            _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + 5
        for _, proc in reversed(self.processes):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(proc, signal.SIGKILL)
            proc.wait()
        self.processes.clear()

    # --- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> "ControlPlane":
        try:
            self._start()
        except BaseException:
            self.failed = True
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop()
        if exc_type is not None:
            self.failed = True
        if self.failed or self.keep_logs:
            return
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _start(self) -> None:
        etcd_port, peer_port = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        if self.restore:
            self._restore_etcd(peer_port)
        self.run("etcd", [str(self.binaries["etcd"]), "--name", "sim", "--data-dir", str(self.workdir / "etcd"),
                          "--listen-client-urls", self.etcd_url,
                          "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                          "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                          "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                          "--initial-cluster", f"sim=http://127.0.0.1:{peer_port}",
                          # A throwaway cluster: durability costs seconds and buys nothing.
                          "--unsafe-no-fsync", "--log-level", "warn"])
        pki = self.workdir / "pki"
        sa_key = pki / "sa.key"
        if self.restore:
            shutil.copytree(self.restore / "pki", pki)
        else:
            pki.mkdir()
            subprocess.run(["openssl", "genrsa", "-out", str(sa_key), "2048"], check=True, capture_output=True)
            (pki / "tokens.csv").write_text(f"{self.token},colocate-simulate,colocate-simulate,system:masters\n")
        self.run("kube-apiserver", [
            str(self.binaries["kube-apiserver"]),
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.port}",
            f"--cert-dir={pki}", f"--token-auth-file={pki / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC", f"--enable-admission-plugins={KUBEADM_ADMISSION_PLUGINS}",
            "--allow-privileged=true", f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-key-file={sa_key}", f"--service-account-signing-key-file={sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            # The kubernetes Service's endpoint would be 127.0.0.1, which Endpoints refuse.
            "--endpoint-reconciler-type=none", "--profiling=false", "--v=0",
            # The DefaultTolerationSeconds plugin's 300 s before a pod leaves a NotReady or
            # unreachable node, scaled down 30x like the resubmitter's waits (components.SIM_SETTINGS).
            "--default-not-ready-toleration-seconds=10", "--default-unreachable-toleration-seconds=10",
            # What dist/control-plane/ gives kubeadm when colocate.yaml turns the admission
            # policies on (docs/admission.md): 1.28 serves them only with both flags.
            *(f"--{flag}={value}" for flag, value in API_SERVER_FLAGS.items()),
        ])
        self._write_kubeconfig()
        self._wait_ready()
        self.metrics = {"etcd": f"http://127.0.0.1:{etcd_port}/metrics", "kube-apiserver": f"{self.server}/metrics"}
        common = [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false", "--profiling=false",
                  "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"]
        ports = {name: free_port() for name in ("kube-controller-manager", "kube-scheduler")}
        self.metrics.update({name: f"https://127.0.0.1:{port}/metrics" for name, port in ports.items()})
        self.run("kube-controller-manager", [
            str(self.binaries["kube-controller-manager"]), *common, f"--secure-port={ports['kube-controller-manager']}",
            f"--service-account-private-key-file={sa_key}", f"--root-ca-file={pki / 'apiserver.crt'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}", "--use-service-account-credentials=false",
            # Nodes answer kwok's heartbeats; one silent this long is NotReady (1.28's default).
            "--node-monitor-grace-period=40s",
            *(f"--{flag}={value}" for flag, value in CONTROLLER_MANAGER_FLAGS.items()),
        ])
        self.run("kube-scheduler", [str(self.binaries["kube-scheduler"]), *common,
                                    f"--secure-port={ports['kube-scheduler']}"])

    def _restore_etcd(self, peer_port: int) -> None:
        """The kept snapshot as this member's data folder: ``etcdutl snapshot restore`` checks the
        hash etcd appended to it (etcd v3.5.15 etcdutl/snapshot/v3_snapshot.go Restore) and writes
        a new one-member cluster at this run's peer URL."""
        peer = f"http://127.0.0.1:{peer_port}"
        done = subprocess.run([str(self.binaries["etcdutl"]), "snapshot", "restore", str(self.restore / "etcd.db"),
                               "--name", "sim", "--data-dir", str(self.workdir / "etcd"),
                               "--initial-cluster", f"sim={peer}", "--initial-advertise-peer-urls", peer],
                              capture_output=True, text=True)
        if done.returncode:
            raise SimulationError(f"etcdutl snapshot restore failed: {done.stderr.strip()[-800:]}")

    def snapshot(self, path: Path) -> None:
        """``etcdctl snapshot save``: a consistent copy of the running etcd, with its hash."""
        done = subprocess.run([str(self.binaries["etcdctl"]), f"--endpoints={self.etcd_url}", "snapshot", "save",
                               str(path)], capture_output=True, text=True)
        if done.returncode:
            raise SimulationError(f"etcdctl snapshot save failed: {done.stderr.strip()[-800:]}")

    def _write_kubeconfig(self) -> None:
        self.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "sim",
            "clusters": [{"name": "sim", "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "admin"}}],
        }, indent=1))

    def _wait_ready(self) -> None:
        self.wait_ready("kube-apiserver", lambda: self.request("GET", "/readyz", raw=True), READY_TIMEOUT, 0.2)

    def wait_ready(self, name: str, probe, timeout: float, interval: float) -> None:
        """Call ``probe`` until it answers without a connection error; the process ``name`` must
        stay alive meanwhile, and after ``timeout`` seconds the error quotes the end of its log."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            try:
                probe()
                return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise SimulationError(f"{name} not ready after {timeout:.0f} s; its log is "
                                      f"{self.logs / f'{name}.log'}:\n{self.tail(name)}")
            time.sleep(interval)

    # --- clients -----------------------------------------------------------------------------
    def request(self, method: str, path: str, body: dict | None = None, raw: bool = False,
                content_type: str = "application/json"):
        """One API call as the cluster admin; the decoded JSON answer (``raw``: the bytes)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.server}{path}", data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": content_type, "Accept": "application/json"})
        with urllib.request.urlopen(request, context=_INSECURE, timeout=30) as response:
            payload = response.read()
        return payload if raw else json.loads(payload)

    def scrape(self, component: str) -> str:
        """The Prometheus exposition text of a component's /metrics (as the cluster admin)."""
        url = self.metrics[component]
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, context=_INSECURE, timeout=30) as response:
            return response.read().decode()

    def items(self, path: str) -> list[dict]:
        """The objects a list path returns (``/api/v1/pods``)."""
        return self.request("GET", path)["items"]

    def path(self, api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of a kind's objects (from the API server's discovery, so custom resources
        count once their CRD is established); SimulationError when the server has no such kind."""
        key = (api_version, kind)
        if key not in self._resources:
            prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                found = self.request("GET", prefix)["resources"]
            except urllib.error.HTTPError:
                found = []
            for resource in found:
                if "/" not in resource["name"]:
                    self._resources[(api_version, resource["kind"])] = (f"{prefix}/{resource['name']}",
                                                                        resource["namespaced"])
        if key not in self._resources:
            raise SimulationError(f'no matches for kind "{kind}" in version "{api_version}": '
                                  "the API server does not serve it (is its CRD installed?)")
        base, namespaced = self._resources[key]
        if namespaced and namespace:
            base = base.replace(prefix_of(base), f"{prefix_of(base)}/namespaces/{namespace}", 1)
        return f"{base}/{name}" if name else base

    def apply(self, obj: dict, manager: str = "colocate-simulate") -> None:
        """Server-side apply of one object, as ``kubectl apply --server-side --force-conflicts``;
        urllib.error.HTTPError carries the API server's refusal."""
        meta = obj.get("metadata") or {}
        path = self.path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta["name"])
        self.request("PATCH", f"{path}?fieldManager={manager}&force=true", obj,
                     content_type="application/apply-patch+yaml")

    def wait_established(self, crds: list[str], timeout: float = 30.0) -> None:
        """Until every named CRD is Established, then re-read discovery. (``kubectl wait`` fails
        outright on a CRD whose status has no conditions yet, which a busy machine shows.)"""
        deadline = time.monotonic() + timeout
        waiting = set(crds)
        while waiting:
            for name in sorted(waiting):
                crd = self.request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
                if any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in (crd.get("status") or {}).get("conditions") or []):
                    waiting.discard(name)
            if waiting and time.monotonic() > deadline:
                raise SimulationError(f"CRDs not established after {timeout:.0f} s: {', '.join(sorted(waiting))}")
            time.sleep(0.2 if waiting else 0)
        self.forget_kinds()

    def forget_kinds(self) -> None:
        """Re-read discovery on the next path() (after CRDs are created)."""
        self._resources.clear()


def prefix_of(base: str) -> str:
    """``/apis/apps/v1/deployments`` -> ``/apis/apps/v1``."""
    return base.rsplit("/", 1)[0]


def refusal(error: urllib.error.HTTPError) -> str:
    """The API server's message in a refused request (its Status object), else the HTTP reason."""
    try:
        return json.loads(error.read()).get("message") or error.reason
    except (ValueError, OSError):
        return str(error.reason)


_INSECURE = ssl.create_default_context()
_INSECURE.check_hostname = False
_INSECURE.verify_mode = ssl.CERT_NONE


def _die_with_parent() -> None:
    """In the child: the kernel kills it when colocate dies, even by SIGKILL (prctl PR_SET_PDEATHSIG)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass

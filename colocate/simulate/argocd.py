"""Argo CD in the simulation: its real application controller and repo server (v2.10.15) sync
dist/ from a git repository made from the tree being simulated, exactly as on the cluster:
waves, sync options, server-side apply, prune. What the cluster-side install would provide
(CRDs, the argocd-* ConfigMaps and Secret, the default AppProject) is created here, and the
destination https://kubernetes.default.svc is the simulated API server (docs/simulate.md)."""
from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping

import yaml

from colocate.base.data_files import data_path
from colocate.base import safe_yaml
from colocate.config import Config
from colocate.model.names import KEEP_ON_PRUNE, sync_options
from colocate.simulate.local_cluster import READY_TIMEOUT, ControlPlane, SimulationError, free_port, refusal

CRDS = data_path("colocate.policies", "crds", "argoproj.io")
#: The controller and the repo server only read these when they carry this label
#: (argo-cd v2.10.15 common/common.go LabelKeyAppName / util/settings).
PART_OF = {"app.kubernetes.io/part-of": "argocd"}
#: The first sync of dist/ takes 50-160 s on 2 cores (Kueue's CRDs, applied server-side, are
#: most of the growth); on a machine busy with other work it has passed 300 s, so the bound is wide.
SYNC_TIMEOUT = 480.0
#: The controller's --app-resync: it compares every Application with git this often.
APP_RESYNC_SECONDS = 10
_GIT = ["git", "-c", "user.name=colocate-simulate", "-c", "user.email=simulate@colocate.invalid",
        "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]


@dataclass(frozen=True)
class AppState:
    name: str
    sync: str
    health: str
    #: Why it is not Synced: its conditions, or the operation's message.
    message: str
    #: Resources the sync failed on: ("Kind/namespace/name", the API server's message via Argo CD).
    failed: tuple[tuple[str, str], ...]
    #: Its source cannot be read offline (a Helm repository or an upstream git repository).
    offline: bool
    #: Its sync operation's phase (Running while a sync or its retries are under way), or "".
    operation: str = ""


class ArgoCD:
    def __init__(self, cp: ControlPlane, cfg: Config, dist: Path,
                 rewrite: Callable[[dict[str, Any]], bool] | None = None):
        """``rewrite``: called on each webhook configuration of the repository copy; it changes the
        object in place and says whether it did (Kueue's, served by a host process: kueue.py)."""
        self.cp, self.cfg, self.dist = cp, cfg, dist
        self.rewrite = rewrite
        self.namespace = cfg.gitops.argocd_namespace
        self.repo = cp.workdir / "repo"
        self.repo_url = f"file://{self.repo}"

    # --- set-up -------------------------------------------------------------------------------
    def start(self) -> None:
        for crd in sorted(CRDS.glob("*.yaml")):
            for doc in safe_yaml.load_all(crd.read_text()):
                if doc:
                    self.cp.apply(doc)
        self.cp.wait_established(["applications.argoproj.io", "appprojects.argoproj.io"])
        self._make_repo()
        self._install()
        self._run()

    def resume(self, kept_repo: Path, old_repo_url: str, old_server: str) -> None:
        """Start on a kept base (colocate.simulate.kept): its repository copy, committed again at
        this run's addresses (the API server's port and the copy's folder are new), and the
        Applications and the cluster secret etcd holds pointed at them before the controller
        starts, so that it finds every Application as synced as it left it."""
        shutil.copytree(kept_repo, self.repo)
        self._copy_dist(self.dist)
        self.commit("dist/ as simulated, at this run's addresses")
        self.cp.apply(self._cluster_secret())
        for app in self.cp.items(f"/apis/argoproj.io/v1alpha1/namespaces/{self.namespace}/applications"):
            old = json.dumps(app["spec"])
            new = old.replace(old_repo_url, self.repo_url).replace(old_server, self.cp.server)
            if new != old:
                self.cp.request("PATCH", self.cp.path("argoproj.io/v1alpha1", "Application", self.namespace,
                                                      app["metadata"]["name"]),
                                {"spec": json.loads(new)}, content_type="application/merge-patch+json")
        self._run()

    def _run(self) -> None:
        redis_port, repo_port = free_port(), free_port()
        self.cp.run("redis", [str(self.cp.binaries["redis-server"]), "--port", str(redis_port), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no"])
        env = {"ARGOCD_GPG_ENABLED": "false", "HOME": str(self.cp.workdir)}
        self.cp.run("argocd-repo-server", [str(self.cp.binaries["argocd-repo-server"]), "--disable-tls",
                                           f"--port={repo_port}", "--address=127.0.0.1",
                                           f"--metrics-port={free_port()}", f"--redis=127.0.0.1:{redis_port}",
                                           "--loglevel=warn"], env=env)
        metrics_port = free_port()
        self.cp.run("argocd-application-controller", [
            str(self.cp.binaries["argocd-application-controller"]), f"--kubeconfig={self.cp.kubeconfig}",
            f"--namespace={self.namespace}", f"--repo-server=127.0.0.1:{repo_port}", "--repo-server-plaintext",
            f"--redis=127.0.0.1:{redis_port}", f"--metrics-port={metrics_port}", "--loglevel=warn",
            # Resync every 10 s instead of 3 min: the simulation waits for the last wave.
            f"--app-resync={APP_RESYNC_SECONDS}", "--self-heal-timeout-seconds=1"], env=env)
        self._wait_controller(metrics_port)

    def _wait_controller(self, metrics_port: int) -> None:
        """Until the controller serves its metrics, which it starts once its Application and
        AppProject informers have synced (argo-cd v2.10.15 controller/appcontroller.go Run). An
        Application it lists earlier may be indexed before the AppProject informer has the project:
        the index function then persists an InvalidSpecError condition ('project default which
        does not exist', appcontroller.go newApplicationInformerAndLister), and the first sync,
        reading it (controller/sync.go SyncAppState), fails and waits out a 20 s retry backoff.
        On a cluster the bootstrap Application is applied to an Argo CD already running."""
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            self.cp.check_alive()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5):
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SimulationError(f"the Argo CD application controller did not serve its metrics after "
                                      f"{READY_TIMEOUT:.0f} s; its log is {self.cp.logs / 'argocd-application-controller.log'}")
            time.sleep(0.2)

    def _make_repo(self) -> None:
        """A commit of the simulated dist/ (uncommitted work included) whose Applications point at
        this repository and at the simulated API server."""
        self._copy_dist(self.dist)
        subprocess.run([*_GIT, "init", "-q", str(self.repo)], check=True)
        self.commit("dist/ as simulated")

    def _copy_dist(self, dist: Path) -> None:
        """``dist`` as the repository copy's dist/, its Applications pointed at this repository and
        at the simulated API server."""
        shutil.rmtree(self.repo / "dist", ignore_errors=True)
        shutil.copytree(dist, self.repo / "dist")
        ours, server = self.cfg.gitops.repo_url, self.cfg.gitops.destination_server
        for file in (self.repo / "dist").rglob("*.yaml"):
            text = file.read_text()
            if ours in text or server in text:
                file.write_text(text := text.replace(ours, self.repo_url).replace(server, self.cp.server))
            if self.rewrite and "WebhookConfiguration" in text:
                docs = [d for d in safe_yaml.load_all(text) if d]
                if [self.rewrite(d) for d in docs if isinstance(d, dict)].count(True):
                    file.write_text(yaml.safe_dump_all(docs, sort_keys=False))

    def commit(self, message: str) -> None:
        subprocess.run([*_GIT, "-C", str(self.repo), "add", "-A"], check=True)
        subprocess.run([*_GIT, "-C", str(self.repo), "commit", "-q", "--allow-empty", "-m", message], check=True)

    def _install(self) -> None:
        ns = self.namespace
        self.cp.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        meta = lambda name: {"name": name, "namespace": ns, "labels": dict(PART_OF)}  # noqa: E731
        for name in ("argocd-cm", "argocd-rbac-cm", "argocd-cmd-params-cm"):
            self.cp.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name), "data": {}})
        self.cp.apply({"apiVersion": "v1", "kind": "Secret", "metadata": meta("argocd-secret"),
                       "stringData": {"server.secretkey": "simulated"}})
        self.cp.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
                       "metadata": {"name": self.cfg.gitops.project, "namespace": ns},
                       "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}})
        self.cp.apply(self._cluster_secret())

    def _cluster_secret(self) -> dict[str, Any]:
        """The simulated API server, as Argo CD's cluster secret names it."""
        cluster = {"bearerToken": self.cp.token, "tlsClientConfig": {"insecure": True}}
        return {"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "simulated-cluster", "namespace": self.namespace,
                             "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in
                         {"name": "simulated", "server": self.cp.server, "config": json.dumps(cluster)}.items()}}

    def refresh_root(self) -> None:
        """Ask for an immediate refresh of the bootstrap Applications (a webhook would on a push)."""
        for file in sorted((self.repo / "dist" / "bootstrap").glob("*.yaml")):
            for doc in safe_yaml.load_all(file.read_text()):
                if doc and doc.get("kind") == "Application":
                    self.refresh(doc["metadata"]["name"])

    def refresh(self, app: str, kind: str = "hard") -> None:
        """Ask for an immediate refresh of Application ``app``: "hard" reads git again past the
        repo server's cache, "normal" compares with the commit it resolves now."""
        path = self.cp.path("argoproj.io/v1alpha1", "Application", self.namespace, app)
        self.cp.request("PATCH", path, {"metadata": {"annotations": {"argocd.argoproj.io/refresh": kind}}},
                        content_type="application/merge-patch+json")

    def apply_bootstrap(self) -> list[str]:
        """Apply dist/bootstrap/ (the root Application) from the repository copy; refusals."""
        errors = []
        for file in sorted((self.repo / "dist" / "bootstrap").glob("*.yaml")):
            for doc in safe_yaml.load_all(file.read_text()):
                if doc:
                    try:
                        self.cp.apply(doc)
                    except urllib.error.HTTPError as exc:
                        errors.append(f"{file.name}: {refusal(exc)}")
        return errors

    # --- state --------------------------------------------------------------------------------
    def apps(self) -> list[AppState]:
        out = []
        for app in self.cp.items(f"/apis/argoproj.io/v1alpha1/namespaces/{self.namespace}/applications"):
            status = app.get("status") or {}
            source = app["spec"].get("source") or {}
            offline = bool(source.get("chart")) or not source.get("repoURL", "").startswith("file://")
            op = status.get("operationState") or {}
            failed = tuple(("/".join(x for x in (r.get("kind"), r.get("namespace"), r.get("name")) if x), r.get("message", ""))
                           for r in (op.get("syncResult") or {}).get("resources") or []
                           if r.get("status") == "SyncFailed" or r.get("hookPhase") == "Failed")
            conditions = [f"{c.get('type')}: {c.get('message')}" for c in status.get("conditions") or []]
            message = "; ".join(conditions or ([op["message"]] if op.get("phase") in ("Failed", "Error") else []))
            out.append(AppState(app["metadata"]["name"], (status.get("sync") or {}).get("status", "Unknown"),
                                (status.get("health") or {}).get("status", "Unknown"), message, failed, offline,
                                op.get("phase", "")))
        return sorted(out, key=lambda a: a.name)

    def wait_synced(self, expected: set[str], tick=None) -> list[AppState]:
        """Until every expected Application exists and those that can render offline are Synced
        (or have failed for good), and nothing changed for a few seconds; bounded. ``tick`` is
        called on each poll (the operator stand-in). A sync that failed on a kind the API server
        did not serve yet is retried by Argo CD (the Applications' retry policy) once another
        Application installed its CRD: it is not done until its kind is served and the retry ran."""
        deadline = time.monotonic() + SYNC_TIMEOUT
        last, quiet = None, time.monotonic()
        while time.monotonic() < deadline:
            self.cp.check_alive()
            if tick:
                tick(self.cp)
            apps = self.apps()
            done = {a.name for a in apps} >= expected and all(self._done(a) for a in apps)
            if apps != last:
                last, quiet = apps, time.monotonic()
            elif done and time.monotonic() - quiet >= 3:
                return apps
            time.sleep(0.5)
        raise SimulationError(f"Argo CD did not finish syncing in {SYNC_TIMEOUT:.0f} s: "
                              + "; ".join(f"{a.name} {a.sync}/{a.health} {a.operation} {a.message}" for a in (last or []))
                              + f"; its logs are in {self.cp.logs}")

    def _done(self, app: AppState) -> bool:
        if app.offline:
            return True
        if app.operation == "Running":  # a sync under way, or failed and waiting for its retry
            return bool(app.failed) and not any(self._served(message) for _, message in app.failed)
        return app.sync == "Synced" or bool(app.message or app.failed)

    def _served(self, message: str) -> bool:
        """Argo CD failed on a kind the API server did not serve, and it serves it now (a retry
        will succeed). Argo CD's words (v2.10.15): 'no matches for kind "K" in version "g/v"'
        (kubectl's apply), 'could not find g/K' (its own discovery) or 'K.g "" not found' (the dry run)."""
        found = re.search(r'no matches for kind "([^"]+)" in version "([^"]+)"', message)
        if found:
            kind, api_version = found.groups()
        else:
            found = re.search(r"could not find ([\w.-]+)/(\w+) ", message)
            if found:
                group, kind = found.groups()
            else:  # the dry run's 'K.group "" not found'
                found = re.search(r'^(\w+)\.([\w.-]+) "" not found', message)
                if not found:
                    return False
                kind, group = found.groups()
            api_version = next((f"{group}/{v['version']}" for g in self.cp.request("GET", "/apis")["groups"]
                                if g["name"] == group for v in g["versions"][:1]), None)
            if api_version is None:
                return False
        try:
            self.cp.path(api_version, kind)
        except SimulationError:
            return False
        return True


@dataclass(frozen=True)
class AppChange:
    """What the sync of a change did to one Application: its sync operation of the change's
    commit, resource by resource, in Argo CD's and the API server's words."""

    name: str
    #: The operation's phase (Succeeded, Failed, Error, or Running while its retries go on); ""
    #: when the change left the Application in sync and it started no sync.
    phase: str
    message: str = ""
    created: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    pruned: tuple[str, ...] = ()
    #: ("Kind/namespace/name", the message) of each resource the sync failed on.
    failed: tuple[tuple[str, str], ...] = ()
    #: "Kind/namespace/name (hook type: phase)" of each hook the sync ran: Argo CD runs a hook
    #: on every sync that reaches its phase, so a change that syncs an Application runs them again.
    hooks: tuple[str, ...] = ()
    #: "Kind/namespace/name (Argo CD's words)" of each object the change removed that the sync
    #: kept: Prune=false ("ignored (no prune)"), or pruning not enabled ("ignored (requires
    #: pruning)"), gitops-engine pkg/sync/sync_context.go pruneObject at argo-cd v2.10.15's pin.
    kept: tuple[str, ...] = ()
    #: Objects that were live and that the sync applied server-side: kubectl says
    #: "serverside-applied" whether or not anything changed (with ApplyOutOfSyncOnly, Argo CD
    #: applies only what differs from git).
    applied: tuple[str, ...] = ()
    #: How many sync operations of the change's commit ran (self-heal starts another while what the
    #: first pruned is still being deleted); each reruns the hooks.
    syncs: int = 1

    @property
    def ok(self) -> bool:
        return not self.failed and self.phase in ("", "Succeeded")


class SyncLog:
    """Every sync operation of the change's commit, read while each is its Application's last:
    the next one (self-heal, a retry) replaces ``status.operationState``, so one read at the end
    would miss what the first did. ``record`` is called on each poll."""

    def __init__(self, argo: "ArgoCD", head: str, files: dict[str, str], held: set[str]) -> None:
        self.argo, self.head, self.files, self.held = argo, head, files, held
        self.names: set[str] = set()
        self.ops: dict[tuple[str, str], AppChange] = {}   # (Application, startedAt) -> what it did

    def record(self, _cp=None) -> None:
        for app in self.argo.cp.items(f"/apis/argoproj.io/v1alpha1/namespaces/{self.argo.namespace}/applications"):
            self.names.add(app["metadata"]["name"])
            change = app_change(app, self.head, self.files, self.held)
            if change.phase:
                started = ((app.get("status") or {}).get("operationState") or {}).get("startedAt", "")
                self.ops[(change.name, started)] = change

    def changes(self) -> list[AppChange]:
        """Per Application: what all its operations did, the last one's phase and failures."""
        out = []
        for name in sorted(self.names):
            ops = [c for (app, _), c in sorted(self.ops.items()) if app == name]
            if not ops:
                out.append(AppChange(name, ""))
                continue
            last = ops[-1]
            merged = {k: tuple(dict.fromkeys(x for c in ops for x in getattr(c, k)))
                      for k in ("created", "changed", "pruned", "hooks", "kept", "applied")}
            out.append(AppChange(name, last.phase, last.message, failed=last.failed, syncs=len(ops), **merged))
        return out


def sync_change(argo: "ArgoCD", change: Path, held: set[str], tick=None) -> SyncLog:
    """Commit ``change`` (a dist/ tree) over the running base as a merged pull request, ask every
    Application to refresh (what a git webhook does), wait until each has compared that commit
    and finished any sync it started; the log of its syncs, to record on until the cluster
    settled. ``held``: the objects ("Kind/namespace/name") live before the sync. Argo CD syncs
    only what differs (automated sync, argo-cd v2.10.15 controller/appcontroller.go
    autoSync); the API server refuses what it will not change in place."""
    argo._copy_dist(change)
    argo.commit("the change")
    head = subprocess.run([*_GIT, "-C", str(argo.repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    expected = {d["metadata"]["name"] for f in sorted(change.rglob("*.yaml")) for d in safe_yaml.load_all(f.read_text())
                if isinstance(d, dict) and d.get("kind") == "Application"}
    files = {"/".join(x for x in (d["kind"], (d.get("metadata") or {}).get("namespace"), (d.get("metadata") or {}).get("name")) if x):
             f.relative_to(change).as_posix() for f in sorted(change.rglob("*.yaml"))
             for d in safe_yaml.load_all(f.read_text()) if isinstance(d, dict) and "kind" in d}
    log = SyncLog(argo, head, files, held)
    for name in _app_paths(argo):
        argo.refresh(name, "normal")

    def compared() -> bool:   # an Application may sync, and self-heal, while others still compare
        log.record()
        return all(_status(argo, name).get("sync", {}).get("revision") == head for name in _app_paths(argo))
    _wait(argo, compared, f"every Application to compare the change's commit {head[:8]}")

    def poll(cp: ControlPlane) -> None:
        if tick:
            tick(cp)
        log.record()
    argo.wait_synced(expected, tick=poll)
    log.record()
    return log


def app_change(app: dict, head: str, files: dict[str, str], held: set[str] = frozenset()) -> AppChange:
    """What ``app``'s last sync operation did, if it synced commit ``head``: its resource results
    (argo-cd v2.10.15 pkg/apis/application/v1alpha1/types.go ResourceResult), each failure named
    by its file of the change (``files``: "Kind/namespace/name" -> dist/-relative path). An
    object applied server-side is created unless it is one of ``held``, the objects live before,
    and then applied: kubectl says "serverside-applied" whether it created, changed or left it
    (k8s.io/kubectl v0.26.11, argo-cd's pin, pkg/cmd/apply/apply.go), where a client-side apply
    says "created", "configured" or "unchanged"."""
    op = (app.get("status") or {}).get("operationState") or {}
    result = op.get("syncResult") or {}
    if result.get("revision") != head:
        return AppChange(app["metadata"]["name"], "")
    kinds: dict[str, list] = {"created": [], "changed": [], "pruned": [], "failed": [], "hooks": [], "kept": [],
                              "applied": []}
    for r in result.get("resources") or []:
        obj = "/".join(x for x in (r.get("kind"), r.get("namespace"), r.get("name")) if x)
        # A cluster-scoped object's result carries the Application's destination namespace:
        # named as dist/ or the cluster names it, without.
        bare = f"{r.get('kind')}/{r.get('name')}"
        if bare in held or bare in files:
            obj = bare
        message = r.get("message") or ""
        if r.get("status") == "SyncFailed" or r.get("hookPhase") == "Failed":
            # kubectl names the temporary file Argo CD applied: name the change's own.
            where = f"dist/{files[obj]}" if obj in files else None
            kinds["failed"].append((f"{obj} ({where})" if where else obj,
                                    re.sub(r'"/dev/shm/[0-9]+"', where or "the manifest", message)))
        elif r.get("hookType"):   # a hook's status is always empty (ResourceResult.Status)
            kinds["hooks"].append(f"{obj} ({r['hookType']}: {r.get('hookPhase') or 'not started'})")
        elif r.get("status") == "PruneSkipped":
            kinds["kept"].append(f"{obj} ({message})")
        elif r.get("status") == "Pruned" or message == "pruned":
            kinds["pruned"].append(obj)
        elif message.endswith(" serverside-applied"):
            kinds["applied" if obj in held else "created"].append(obj)
        elif message.endswith(" created"):
            kinds["created"].append(obj)
        elif message.endswith(" configured"):
            kinds["changed"].append(obj)
    return AppChange(app["metadata"]["name"], op.get("phase", ""),
                     op.get("message", "") if op.get("phase") != "Succeeded" else "",
                     *(tuple(kinds[k]) for k in ("created", "changed", "pruned", "failed", "hooks", "kept", "applied")))


#: Stateful kinds first: what a deletion loses for good.
STATEFUL = ("Namespace", "PersistentVolumeClaim", "PersistentVolume", "CustomResourceDefinition")


def drill(argo: "ArgoCD", app: str, kinds: list[tuple[str, str]]) -> list[str]:
    """Remove ``app``'s file from the repository as a pull request would, let the root Application
    prune it (its resources-finalizer deletes what it manages, in cascade), list every object of
    ``kinds`` (apiVersion, kind) that disappeared, then put the file back and wait for the resync."""
    before = objects(argo.cp, kinds)
    files = [f for f in (argo.repo / "dist").rglob("*.yaml") if f"\n  name: {app}\n" in f.read_text()
             and "kind: Application" in f.read_text() and "/bootstrap/" not in str(f)]
    if len(files) != 1:
        raise SimulationError(f"delete drill: no single file for Application {app} in the repository copy")
    kept = files[0].read_text()
    files[0].unlink()
    argo.commit(f"drill: remove {app}")
    argo.refresh_root()
    _wait(argo, lambda: app not in {a.name for a in argo.apps()}, f"Application {app} to be deleted")
    _wait(argo, lambda: not _terminating(argo.cp), "namespaces to finish terminating")
    gone = sorted(before - objects(argo.cp, kinds),
                  key=lambda o: (o.split("/")[0] not in STATEFUL, STATEFUL.index(o.split("/")[0])
                                 if o.split("/")[0] in STATEFUL else 0, o))
    files[0].write_text(kept)
    argo.commit(f"drill: restore {app}")
    argo.refresh_root()
    _wait(argo, lambda: any(a.name == app and a.sync == "Synced" for a in argo.apps()), f"Application {app} to come back")
    return gone


def objects(cp: ControlPlane, kinds: list[tuple[str, str]]) -> set[str]:
    """``Kind/namespace/name`` of every object of ``kinds`` (apiVersion, kind) the API server serves."""
    out = set()
    for api_version, kind in kinds:
        try:
            items = cp.items(cp.path(api_version, kind))
        except (SimulationError, urllib.error.HTTPError):
            continue
        for obj in items:
            meta = obj["metadata"]
            out.add("/".join(x for x in (kind, meta.get("namespace"), meta["name"]) if x))
    return out


def _terminating(cp: ControlPlane) -> bool:
    return any(ns.get("status", {}).get("phase") == "Terminating" for ns in cp.items("/api/v1/namespaces"))


def _wait(argo: "ArgoCD", done, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        argo.cp.check_alive()
        if time.monotonic() > deadline:
            raise SimulationError(f"Argo CD: waited {timeout:.0f} s for {what}; logs in {argo.cp.logs}")
        time.sleep(0.5)


#: A job file becomes these objects in dist/ (constructs/tfjob.py): the TFJob and its claim.
def _job_objects(job: str) -> set[tuple[str, str]]:
    return {("TFJob", job), ("PersistentVolumeClaim", f"{job}-checkpoints")}


def remove_job(argo: "ArgoCD", job: str) -> tuple[str, dict[str, int]]:
    """Delete job ``job``'s file as a pull request would: its TFJob and checkpoint claim leave the
    repository copy. Wait until the Application that synced them has finished a sync of that
    commit and every removed object it may prune is gone from the API server (a TFJob is deleted
    in the foreground, after its pods; until then Argo CD still sees it and re-syncs), then let
    it compare itself with git for two more resync periods (its reconciledAt at least
    2 x APP_RESYNC_SECONDS later): long enough for a self-heal loop (``--self-heal-timeout-seconds=1``)
    to start several syncs. Returns what happened, in one line, and per Application the syncs it
    started in that quiet window: 0 unless a kept object holds it OutOfSync."""
    wanted = _job_objects(job)
    files: dict = {}
    for file in sorted((argo.repo / "dist" / "apps").rglob("*.yaml")):
        docs = [d for d in safe_yaml.load_all(file.read_text()) if isinstance(d, dict)]
        if docs and all((d.get("kind"), (d.get("metadata") or {}).get("name")) in wanted for d in docs):
            files[file] = docs
    if not files:
        raise SimulationError(f"removeJob: no TFJob {job} (nor claim {job}-checkpoints) in dist/apps/")
    folders = {f.parent.relative_to(argo.repo).as_posix() for f in files}
    apps = sorted(name for name, path in _app_paths(argo).items() if path in folders)
    if not apps:
        raise SimulationError(f"removeJob: no Application syncs {', '.join(sorted(folders))}")
    pruned = [d for docs in files.values() for d in docs if KEEP_ON_PRUNE not in sync_options(d.get("metadata"))]
    for file in files:
        file.unlink()
    head = _merge(argo, f"remove job {job}", apps)
    named = ', '.join(d['kind'] + '/' + d['metadata']['name'] for d in pruned)
    _wait(argo, lambda: not any(_exists(argo.cp, d) for d in pruned), f"{named} to be deleted")
    # Argo CD learns of the deletion from its own watch, after we do: a sync it starts meanwhile
    # (it still sees the TFJob, so OutOfSync) belongs to the deletion, not to the quiet window.
    for app in apps:
        _wait(argo, lambda app=app: _caught_up(argo, app, pruned),
              f"Application {app} to list none of {named} and to have no sync under way")
    quiet_from = datetime.now(timezone.utc)
    before = syncs_started(argo.cp, argo.namespace)
    until = quiet_from + timedelta(seconds=2 * APP_RESYNC_SECONDS)
    for app in apps:
        _wait(argo, lambda app=app: (_reconciled_at(argo, app) or quiet_from) >= until,
              f"Application {app} to reconcile for {2 * APP_RESYNC_SECONDS} s after its sync of {head[:8]}")
    after = syncs_started(argo.cp, argo.namespace)
    quiet = {app: after.get(app, 0) - before.get(app, 0) for app in apps}
    line = (f"job {job} removed from git ({', '.join(f.name for f in files)}); {', '.join(apps)} synced {head[:8]}, "
            f"pruned {', '.join(d['kind'] for d in pruned) or 'nothing'}, then started "
            + ", ".join(f"{n} sync(s) ({app})" for app, n in quiet.items())
            + f" in the {2 * APP_RESYNC_SECONDS} s after")
    return line, quiet


def _merge(argo: "ArgoCD", message: str, apps: list[str]) -> str:
    """Commit the repository copy as a merged pull request, ask ``apps`` to refresh (what a git
    webhook does) and wait until each has finished a sync of that commit; the commit."""
    argo.commit(message)
    head = subprocess.run([*_GIT, "-C", str(argo.repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    for app in apps:
        argo.refresh(app, "normal")
    for app in apps:
        _wait_value(argo, lambda app=app: _finished_sync(argo, app, head), f"Application {app} to sync {head[:8]}")
    return head


def add_job(argo: "ArgoCD", job: str, files: Mapping[str, str]) -> str:
    """Add job ``job``'s objects (``files``: dist/-relative path to text, as synth writes them) to
    the repository copy as a merged pull request would, ask the Applications that sync their
    folders to refresh (what a git webhook does) and wait until each has finished a sync of that
    commit and the objects exist. Returns what happened, in one line."""
    folders = {PurePosixPath("dist", path).parent.as_posix() for path in files}
    apps = sorted(name for name, path in _app_paths(argo).items() if path in folders)
    if not apps:
        raise SimulationError(f"addJob {job}: no Application syncs {', '.join(sorted(folders))}")
    docs = []
    for path, text in files.items():
        target = argo.repo / "dist" / path
        if target.exists():
            raise SimulationError(f"addJob {job}: dist/{path} is already in the repository")
        target.write_text(text)
        docs += [d for d in safe_yaml.load_all(text) if isinstance(d, dict)]
    head = _merge(argo, f"add job {job}", apps)
    named = ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in docs)
    _wait(argo, lambda: all(_exists(argo.cp, d) for d in docs), f"{named} to be created")
    return f"job {job} added to git ({', '.join(sorted(files))}); {', '.join(apps)} synced {head[:8]}, created {named}"


def syncs_started(cp: ControlPlane, namespace: str | None = None) -> dict[str, int]:
    """Per Application, the syncs its controller started: one OperationStarted Event each
    (argo-cd v2.10.15 controller/appcontroller.go autoSync, "Initiated automated sync"; each
    Event has a name of its own, util/argo/audit_logger.go)."""
    out: dict[str, int] = {}
    for event in cp.items(f"/api/v1/namespaces/{namespace}/events" if namespace else "/api/v1/events"):
        involved = event.get("involvedObject") or {}
        if event.get("reason") == "OperationStarted" and involved.get("kind") == "Application":
            out[involved["name"]] = out.get(involved["name"], 0) + max(1, event.get("count") or 0)
    return out


def _exists(cp: ControlPlane, doc: dict) -> bool:
    meta = doc.get("metadata") or {}
    try:
        cp.request("GET", cp.path(doc["apiVersion"], doc["kind"], meta.get("namespace"), meta["name"]))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True


def _app_paths(argo: "ArgoCD") -> dict[str, str]:
    out = {}
    for app in argo.cp.items(f"/apis/argoproj.io/v1alpha1/namespaces/{argo.namespace}/applications"):
        source = app["spec"].get("source") or {}
        if source.get("repoURL") == argo.repo_url and source.get("path"):
            out[app["metadata"]["name"]] = str(source["path"]).strip("/")
    return out


def _status(argo: "ArgoCD", app: str) -> dict:
    path = argo.cp.path("argoproj.io/v1alpha1", "Application", argo.namespace, app)
    return argo.cp.request("GET", path).get("status") or {}


def _finished_sync(argo: "ArgoCD", app: str, revision: str) -> datetime | None:
    """When the Application's sync of ``revision`` finished, or None."""
    op = _status(argo, app).get("operationState") or {}
    if (op.get("syncResult") or {}).get("revision") == revision and op.get("finishedAt"):
        return datetime.fromisoformat(op["finishedAt"])
    return None


def _caught_up(argo: "ArgoCD", app: str, gone: list[dict]) -> bool:
    """The Application's last comparison no longer lists the ``gone`` objects (Argo CD lists a live
    object git lacks with requiresPruning), and no sync operation is under way."""
    status = _status(argo, app)
    listed = {(r.get("kind"), r.get("namespace"), r.get("name")) for r in status.get("resources") or []}
    if any((d["kind"], (d.get("metadata") or {}).get("namespace"), d["metadata"]["name"]) in listed for d in gone):
        return False
    return (status.get("operationState") or {}).get("phase") not in ("Running", "Terminating")


def _reconciled_at(argo: "ArgoCD", app: str) -> datetime | None:
    """The Application's last full comparison with git (the controller's clock, as the sync's)."""
    at = _status(argo, app).get("reconciledAt")
    return datetime.fromisoformat(at) if at else None


def _wait_value(argo: "ArgoCD", get, what: str, timeout: float = 90.0):
    found: list = []
    _wait(argo, lambda: found.append(get()) or found[-1] is not None, what, timeout)
    return found[-1]


def generated_manifests(cp: ControlPlane, app: str) -> list[dict]:
    """The manifests the real repo server generated for Application ``app`` (its newest revision's),
    as parsed objects: read from the repo server's manifest cache in redis, where argo-cd v2.10.15
    keeps each GenerateManifest answer (reposerver/cache/cache.go ``manifestCacheKey``:
    ``mfst|<tracking label>|<app>|<revision>|...``, util/cache/redis.go: JSON, gzip). What the
    controller compares with the cluster and applies."""
    redis = next((p for name, p in cp.processes if name == "redis"), None)
    if redis is None:
        raise SimulationError("Argo CD's redis is not running")
    port = int(redis.args[redis.args.index("--port") + 1])
    found = []
    for key in _redis(port, "KEYS", f"mfst|*|{app}|*"):
        value = _redis(port, "GET", key.decode())
        if value:
            # The Go writer is flushed, not closed: a gzip stream without its trailer.
            response = json.loads(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(value)).get("manifestResponse") or {}
            found.append((response.get("revision", ""), [json.loads(m) for m in response.get("manifests") or []]))
    if not found:
        raise SimulationError(f"the repo server has no manifests of Application {app} in its cache")
    head = subprocess.run([*_GIT, "-C", str(cp.workdir / "repo"), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    return next((m for revision, m in found if revision == head), found[-1][1])


def _redis(port: int, *command: str):
    """One redis command over RESP (no client library): bytes, a list of them, or None."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(f"*{len(command)}\r\n".encode() + b"".join(
            f"${len(part.encode())}\r\n".encode() + part.encode() + b"\r\n" for part in command))
        reader = conn.makefile("rb")
        return _resp(reader)


def _resp(reader):
    line = reader.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"$":
        size = int(rest)
        return None if size < 0 else reader.read(size + 2)[:-2]
    if kind == b"*":
        return [_resp(reader) for _ in range(int(rest))]
    if kind == b"-":
        raise SimulationError(f"redis: {rest.decode()}")
    return rest

"""Run the real kubeconform on manifests, offline, with strict schemas and nothing skipped.

Schemas come from two places:
- Kubernetes' own kinds from the PyPI package kubernetes-validate, through a local copy that
  kubeconform can load offline (schema_cache.prepare_core_schemas says why).
- Every other kind we emit from ``policies/schemas/<group>/<kind>_<version>.json``.
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

from colocate.base import go_builds, private_cache, schema_cache
from colocate.base.go_builds import ToolMissing
from colocate.errors import ColocateError
from colocate.base.data_files import data_path

#: The kubeconform colocate is tested with (scripts/bootstrap's KUBECONFORM_VERSION; a test keeps
#: the two equal). Its go.mod at v0.7.0 says go 1.24 (proxy.golang.org).
BUILD = go_builds.Build("kubeconform", ("kubeconform",), "github.com/yannh/kubeconform", "v0.7.0", None,
                        ("github.com/yannh/kubeconform/cmd/kubeconform",), go="1.24",
                        release="https://github.com/yannh/kubeconform/releases/tag/v0.7.0")
ENV = "KUBECONFORM"
INSTALL_HINT = f"colocate runs kubeconform {BUILD.version} (${ENV}, else PATH, else {go_builds.BIN}): `{BUILD.install_command()}`"


@dataclass
class Result:
    """kubeconform's summary and every resource it did not find valid."""

    valid: int
    invalid: int
    errors: int
    skipped: int
    resources: list[dict] = field(default_factory=list)


def binary() -> str:
    """kubeconform: $KUBECONFORM, then PATH, then the tool folder (go_builds.resolve: built there
    with Go on first use; without Go, an error naming the version and how to install it)."""
    return str(go_builds.resolve(BUILD, ENV))


_fallback: list[Path] = []


def _cache() -> Path:
    """Where the schema copy is kept: the user's cache folder, else (one not to be trusted, since
    the copy decides what is valid, or one that cannot be written) a temporary folder of this
    process."""
    folder = private_cache.root()
    if private_cache.folder_problem(folder) is None:
        try:
            private_cache.make_folders(folder / "kubeconform", folder)
            if os.access(folder / "kubeconform", os.W_OK | os.X_OK):
                return folder / "kubeconform"
        except OSError:
            pass
    if not _fallback:
        import atexit
        import tempfile

        _fallback.append(Path(tempfile.mkdtemp(prefix="colocate-schemas-")))
        atexit.register(shutil.rmtree, _fallback[0], ignore_errors=True)
    return _fallback[0]


def schema_locations(kubernetes_version: str) -> list[str]:
    """Our schemas first, then a kubeconform-ready copy of kubernetes-validate's (cached)."""
    try:
        core = schema_cache.prepare_core_schemas(_cache() / "kubernetes-validate", kubernetes_version)
    except FileNotFoundError as exc:
        raise ToolMissing(str(exc)) from None
    ours = data_path("colocate.policies", "schemas") / schema_cache.CRD_SCHEMA_LOCATION.removeprefix("policies/schemas/")
    return [str(ours), schema_cache.CORE_SCHEMA_LOCATION.format(root=core)]


#: Bytes of file names per kubeconform run: well under Linux's 2 MiB ARG_MAX (which the
#: environment shares), so any number of files, however long their names, is validated.
BATCH_BYTES = 256 * 1024


def _batches(paths: list[Path]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for path in map(str, paths):
        if out[-1] and size + len(path) + 1 > BATCH_BYTES:
            out.append([])
            size = 0
        out[-1].append(path)
        size += len(path) + 1
    return out


class Validation:
    """kubeconform over the files, in as many runs as their names need, one after the other
    in a thread; the caller parses YAML and runs the rules meanwhile (:func:`wait`)."""

    def __init__(self, command: list[str], batches: list[list[str]]):
        self.args = command
        self._batches = batches
        self._proc: subprocess.Popen | None = None
        self._stopped = False
        self._outputs: list[tuple[int, str, str]] = []
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        # The first run starts here, so a kubeconform that cannot start is reported at once.
        self._proc = self._popen(batches[0])
        try:
            self._thread = threading.Thread(target=self._run, name="kubeconform", daemon=True)
            self._thread.start()
        except BaseException:  # Ctrl-C before the caller holds this object: stop kubeconform here
            self._proc.kill()
            self._proc.wait()
            raise

    def _popen(self, batch: list[str]) -> subprocess.Popen:
        # "--" ends the options: a file named "-skip=Deployment,x.yaml" is a file, not an option
        # (kubeconform parses its flags with Go's flag package, which stops at "--").
        command = [*self.args, "--", *batch]
        try:
            return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    preexec_fn=_die_with_colocate)
        except OSError as exc:
            raise ToolMissing(f"{command[0]}: kubeconform did not start: {exc.strerror}; {INSTALL_HINT}") from None

    def _run(self) -> None:
        try:
            for i, batch in enumerate(self._batches):
                with self._lock:
                    if self._stopped:
                        return
                    if i:
                        self._proc = self._popen(batch)
                    proc = self._proc
                stdout, stderr = proc.communicate()
                self._outputs.append((proc.returncode, stdout, stderr))
        except BaseException as exc:  # handed to wait()
            self._error = exc

    def poll(self) -> int | None:
        """None while a run goes on. The process is asked too: a Thread.join that Ctrl-C
        interrupted can leave is_alive() False while kubeconform still runs."""
        proc = self._proc
        if proc is not None and proc.returncode is None and _running(proc.pid):
            return None
        return None if self._thread.is_alive() else 0

    def kill(self) -> None:
        with self._lock:
            self._stopped = True
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()
        # The runner thread's communicate() returns once the killed process is gone and reaps it:
        # wait for that, so no kubeconform outlives colocate (SIGKILL is not instant under load).
        self._thread.join(timeout=10)

    def wait(self) -> None:
        self._thread.join()


def served_versions(kind: str, kubernetes_version: str) -> list[str]:
    """The versions Kubernetes ``kubernetes_version`` serves ``kind`` at, as kubernetes-validate's
    schema files name them (``<first label of the group>-<version>``, ``v1`` for core): read
    from the kubeconform-ready copy; [] when it is not there."""
    folder = _cache() / "kubernetes-validate" / f"v{kubernetes_version.lstrip('v')}-local-strict"
    prefix = f"{kind.lower()}-"
    try:
        names = sorted(p.name for p in folder.glob(f"{prefix}*.json"))
    except OSError:
        return []
    return [n[len(prefix):-len(".json")] for n in names if n[len(prefix):-len(".json")].count("-") <= 1]


def _die_with_colocate() -> None:
    """In the child: the kernel kills kubeconform when colocate dies, however it dies (a Ctrl-C
    between Popen and the try that would stop it included); prctl PR_SET_PDEATHSIG = 1."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _running(pid: int) -> bool:
    """The process exists and is no zombie (never reaps it: the runner thread does)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def start(paths: list[Path], kubernetes_version: str) -> Validation:
    """Start validating files and folders; the caller parses YAML and runs rules meanwhile and
    collects the verdict with :func:`wait`."""
    command = [binary(), "-strict", "-summary", "-output", "json", "-kubernetes-version", kubernetes_version]
    for location in schema_locations(kubernetes_version):
        command += ["-schema-location", location]
    return Validation(command, _batches(paths))


def wait(validation: Validation) -> Result:
    """kubeconform's verdict over every run; every schema miss counts as an error, never a skip."""
    validation.wait()
    if validation._error is not None:
        raise validation._error
    total = Result(0, 0, 0, 0, [])
    for returncode, stdout, stderr in validation._outputs:
        part = _verdict(validation.args[0], returncode, stdout, stderr)
        total = Result(total.valid + part.valid, total.invalid + part.invalid, total.errors + part.errors,
                       total.skipped + part.skipped, total.resources + part.resources)
    return total


def _verdict(program: str, returncode: int, stdout: str, stderr: str) -> Result:
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        said = " ".join((stderr.strip() or stdout.strip()).splitlines()[:3]) or "no output"
        raise ToolMissing(f"{program}: kubeconform failed (exit {returncode}): {said}; {INSTALL_HINT}") from None
    summary = report.get("summary") if isinstance(report, dict) else None
    if not isinstance(summary, dict):
        raise ToolMissing(f"{program}: kubeconform printed no summary; {INSTALL_HINT}")
    return Result(summary["valid"], summary["invalid"], summary["errors"], summary["skipped"],
                  report.get("resources") or [])


def unjudged(result: Result, expected: int) -> None:
    """Refuse a verdict that does not cover every object: kubeconform must have judged each one
    (valid, invalid or error) and skipped none. ``expected`` counts the objects as kubeconform
    splits them (:func:`colocate.checker.manifests.kubeconform_resources`)."""
    judged = result.valid + result.invalid + result.errors
    if result.skipped or judged != expected:
        raise ColocateError(f"kubeconform judged {judged} of the {expected} objects ({result.skipped} skipped): "
                            "nothing may go unvalidated, so the check stops; a file name or an option that "
                            "kubeconform read as one of its own can cause this")


def run(paths: list[Path], kubernetes_version: str) -> Result:
    """Validate files and folders and wait for the verdict."""
    return wait(start(paths, kubernetes_version))

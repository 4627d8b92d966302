"""The project's tools: the environment the Makefile gives them, for code that starts them, the
``go install`` of a pinned build into the tool folder with its stamp, shared by the simulation's
components (colocate/simulate/toolchain.py) and the renderers (colocate/synth/renderers.py), and
where a tool colocate runs is found (:func:`resolve`).

The tool folder is the checkout's bin/ (scripts/bootstrap fills it) or, for an installed
colocate, ``tools/`` in the user's cache folder (colocate/base/private_cache.py: the verdict
cache's folder), never site-packages."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from colocate import ROOT
from colocate.errors import ColocateError, InputError


def environment() -> dict[str, str]:
    """os.environ with the project's Node.js for jsii, and node_modules/.bin, bin/ (kubeconform)
    and this interpreter's folder (the console scripts) first on PATH."""
    out = dict(os.environ)
    out.setdefault("JSII_NODE", str(ROOT / "node_modules" / ".bin" / "node"))
    out["PATH"] = os.pathsep.join([str(ROOT / "node_modules" / ".bin"), str(ROOT / "bin"),
                                   str(Path(sys.executable).parent), out.get("PATH", "")])
    return out


#: A checkout (an editable install) rather than a wheel: the tools' sources and bin/ are there.
CHECKOUT = (ROOT / "pyproject.toml").is_file() and (ROOT / "scripts" / "bootstrap").is_file()


def tool_folder() -> Path:
    """Where colocate keeps the tools it builds: bin/ in a checkout, else the user's cache folder's tools/."""
    if CHECKOUT:
        return ROOT / "bin"
    from colocate.base import private_cache

    return private_cache.root() / "tools"


BIN = tool_folder()
#: The Go modules of the simulation's components: tools/sim/ in a checkout; a wheel carries them
#: as colocate/simtools/ (pyproject.toml), so an installed colocate builds what a checkout builds.
TOOLS = ROOT / "tools" / "sim" if CHECKOUT else Path(__file__).resolve().parent.parent / "simtools"


@dataclass(frozen=True)
class Build:
    """One ``go install`` and the binaries it leaves in bin/."""

    name: str
    binaries: tuple[str, ...]
    #: Module whose version colocate.yaml pins, and that version.
    module: str
    version: str
    #: A module in tools/sim/ (built there) or None for ``go install <package>@<version>``.
    folder: str | None
    packages: tuple[str, ...]
    ldflags: str = ""
    #: How long a cold build took on the 2-core CI machine, for the progress line.
    cold: str = ""
    #: The Go its go.mod asks for, and where its release binaries are: what the user is told
    #: when colocate cannot build it.
    go: str = "1.21"
    release: str = ""

    def install_command(self) -> str:
        """The one command that installs this build (into the tool folder, where colocate looks)."""
        flags = f" -ldflags '{self.ldflags}'" if self.ldflags else ""
        return f"GOBIN={BIN} go install{flags} {' '.join(f'{p}@{self.version}' for p in self.packages)}"

    def stamp(self) -> str:
        digest = hashlib.sha256(f"{self.module} {self.version} {self.ldflags}\n".encode())
        if self.folder:
            for path in sorted((TOOLS / self.folder).rglob("*")):
                if path.is_file():
                    digest.update(path.relative_to(TOOLS).as_posix().encode() + b"\0" + path.read_bytes())
        return digest.hexdigest()


def _stamp_file(build: Build) -> Path:
    return BIN / f".sim-{build.name}.stamp"


def up_to_date(build: Build) -> bool:
    stamp = _stamp_file(build)
    return (stamp.is_file() and stamp.read_text().strip() == build.stamp()
            and all((BIN / b).is_file() for b in build.binaries))


def go_install(build: Build, log, label: str = "simulate tools") -> None:
    go = shutil.which("go")
    if go is None:
        if build.folder is None:
            raise ToolMissing(missing_message(build))
        raise InputError("go", "", "not found: the simulation builds Kubernetes, etcd, kwok and the "
                         "training-operator from source; install Go >= 1.25 (https://go.dev/dl)")
    targets = build.packages if build.folder else tuple(f"{p}@{build.version}" for p in build.packages)
    cold = f"{build.cold} cold on 2 cores" if build.cold else "minutes with a cold Go build cache"
    log(f"{label}: building {', '.join(build.binaries)} {build.version} into {BIN} with go install "
        f"({cold}, seconds when the Go build cache is warm)")
    started = time.monotonic()
    env = dict(os.environ, GOBIN=str(BIN))
    if not BIN.is_dir():
        from colocate.base import private_cache

        private_cache.make_folders(BIN, None if CHECKOUT else BIN.parent)
    # `go install pkg@version` ignores any go.mod around it; the tool folder is one that exists.
    cwd = TOOLS / build.folder if build.folder else BIN
    argv = [go, "install", *(["-ldflags", build.ldflags] if build.ldflags else []), *targets]
    result = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise InputError(" ".join(argv), "", f"go install failed (exit {result.returncode}):\n{result.stdout[-4000:]}")
    _stamp_file(build).write_text(build.stamp() + "\n")
    log(f"{label}: built {', '.join(build.binaries)} in {time.monotonic() - started:.0f} s")


class ToolMissing(ColocateError):
    """A tool colocate runs is nowhere, or not the one it needs, and cannot be built here (exit 2)."""


def missing_message(build: Build, env_var: str = "") -> str:
    """What the user reads when ``build`` is nowhere and Go is missing: the version, and the
    command that installs it (never a make target, which only this repository has)."""
    looked = ", ".join([f"${env_var}"] * bool(env_var) + ["PATH", str(BIN)])
    release = f"put its release binary on PATH ({build.release}), or " if build.release else ""
    return (f"{build.name} {build.version} not found (looked at {looked}), and no `go` on PATH to build it: "
            f"{release}install Go >= {build.go} (https://go.dev/dl) and run `{build.install_command()}` "
            "(colocate runs it itself when go is on PATH)")


def _untrusted(binary: Path) -> str | None:
    """Why the per-user tool folder, or ``binary`` in it, may hold another user's program: owned
    by someone else, or writable by others (as ssh refuses such a ~/.ssh); None when it is fine
    or missing."""
    for path in (binary.parent, binary):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{path} cannot be read ({exc.strerror})"
        if st.st_uid != os.geteuid():
            return f"{path} is owned by user {st.st_uid}, not by you"
        if st.st_mode & 0o022:
            return f"{path} is writable by other users"
    return None


def _runs(path: str | None) -> bool:
    return bool(path) and Path(path).is_file() and os.access(path, os.X_OK)


def resolve(build: Build, env_var: str, *, pinned=None, log=None) -> Path:
    """The binary of a one-binary ``build``: ``$env_var``, then PATH, then the tool folder; when it
    is nowhere, ``go install`` of the pinned version into the tool folder with a progress line
    on stderr (``log``); without Go, :class:`ToolMissing` naming the version and the command that
    installs it.

    ``pinned(path)`` says why a binary found through ``$env_var`` or PATH is not the pinned
    version (None when it is): for tools whose output decides dist/'s bytes. Such a binary on
    PATH is passed over; named by ``$env_var``, it is an error. In the tool folder a pinned
    build must carry its stamp (:func:`up_to_date`)."""
    [name] = build.binaries
    explicit = os.environ.get(env_var, "")
    if explicit:
        if not _runs(explicit):
            raise ToolMissing(f"${env_var}={explicit} is not an executable file")
        problem = pinned(explicit) if pinned else None
        if problem:
            raise ToolMissing(f"${env_var}={explicit}: {problem}; colocate needs {name} {build.version}")
        return Path(explicit)
    on_path = shutil.which(name)
    if _runs(on_path):
        problem = pinned(on_path) if pinned else None
        if problem is None:
            return Path(on_path)
        from colocate.base import private_cache

        private_cache.warn(f"{on_path}: {problem}; colocate uses {name} {build.version} from {BIN}")
    local = BIN / name
    untrusted = None if CHECKOUT else _untrusted(local)
    if untrusted:
        raise ToolMissing(f"{untrusted}: colocate runs no program from there (another user could have put it); "
                          f"fix the permissions, or name {name} {build.version} with ${env_var} or on PATH")
    if _runs(str(local)) and (pinned is None or up_to_date(build)):
        return local
    if shutil.which("go") is None:
        raise ToolMissing(missing_message(build, env_var))
    go_install(build, log or (lambda line: print(f"colocate: {line}", file=sys.stderr, flush=True)), label=name)
    return local


def run_main(ensure, label: str) -> int:
    """A toolchain's ``python -m`` entry point: build what is missing with a progress line per
    build; exit 2 with the reason when a build cannot run or fails."""
    try:
        ensure(log=lambda line: print(line, flush=True))
    except ColocateError as exc:
        print(f"{label}: ERROR: {exc}", file=sys.stderr)
        return 2
    return 0

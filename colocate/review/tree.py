"""dist/ as of a git revision or the working tree: its objects and their Argo CD Application."""
from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from colocate.checker import manifests
from colocate.base import safe_yaml
from colocate.base.text import escape_lines
from colocate.errors import ColocateError, InputError
from colocate.base.layout import INDEX_FILE

#: ``colocate diff`` with no HEAD compares against the files on disk.
WORKTREE = "working tree"


@dataclass(frozen=True)
class Key:
    """An object's identity: the API server knows it by group, kind, namespace and name."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Entry:
    key: Key
    #: Path of the file under dist/ (``apps/training/tfjob.training.x.yaml``).
    file: str
    #: Argo CD Application that applies it, or ``dist/<folder>`` for folders no Application syncs.
    app: str
    obj: dict[str, Any]


@dataclass(frozen=True)
class Tree:
    """One side of a diff: where it came from, its objects by key, and its files on disk."""

    label: str
    root: Path
    objects: dict[Key, Entry]


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)


def toplevel(cwd: Path) -> Path:
    proc = _git(cwd, "rev-parse", "--show-toplevel")
    if proc.returncode:
        raise ColocateError(f"{cwd} is not inside a git repository: colocate diff compares git revisions")
    return Path(proc.stdout.decode().strip())


def resolve(repo: Path, revision: str) -> str:
    """The commit a revision names; bad input (exit 2) when git does not know it."""
    # --end-of-options: a revision that starts with "-" is a name git does not know, never an option.
    proc = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    if proc.returncode:
        raise ColocateError(f"unknown git revision {revision!r} in {repo}")
    return proc.stdout.decode().strip()


#: The main branch, local then remote-tracking, fully qualified: a bare "main" is ambiguous when a
#: tag of that name exists, git takes the tag (gitrevisions(7): refs/tags/ comes before
#: refs/heads/) and its warning went unseen.
MAIN_REFS = ("refs/heads/main", "refs/remotes/origin/main")


def default_base(repo: Path, refs: tuple[str, ...] = MAIN_REFS) -> str:
    """The merge-base of HEAD with the main branch (local, then remote-tracking)."""
    for ref in refs:
        proc = _git(repo, "merge-base", ref, "HEAD")
        if proc.returncode == 0:
            return proc.stdout.decode().strip()
    raise ColocateError(f"no merge-base of HEAD with {' or '.join(refs)} in {repo}: name BASE explicitly")


@contextmanager
def checkout(repo: Path, revision: str | None, dist: str) -> Iterator[Path]:
    """dist/ of ``revision`` extracted to a temporary folder, or the working tree's when None.
    A revision without dist/ yields an empty folder (everything in the other side is added)."""
    if revision is None:
        yield repo / dist
        return
    with tempfile.TemporaryDirectory(prefix="colocate-diff-") as tmp:
        proc = _git(repo, "archive", "--format=tar", revision, "--", dist)
        if proc.returncode == 0:
            try:
                with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as archive:
                    archive.extractall(tmp, filter="data")
            except tarfile.FilterError as exc:  # an absolute link, a path out of the tree
                raise ColocateError(f"{dist} at {revision[:12]}: {exc}; dist/ holds plain files") from None
        elif b"did not match any files" not in proc.stderr:
            raise ColocateError(f"git archive {revision} -- {dist} failed: {proc.stderr.decode().strip()}")
        yield Path(tmp) / dist


@contextmanager
def config_at(repo: Path, revision: str | None, config_path: Path | None) -> Iterator[Path | None]:
    """colocate.yaml as ``revision`` had it, to check that revision's dist/ by: a change that
    renames a tier, a namespace or the registry host would otherwise show the old tree breaking
    the new names' rules, findings the change "resolves". The working tree's (None, the default)
    for the working tree, when --config names a file, or when the revision holds none."""
    if config_path is not None or revision is None:
        yield config_path
        return
    from colocate import config

    try:
        rel = config.default_path().resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:  # a colocate.yaml outside the repository has no revisions
        yield None
        return
    proc = _git(repo, "show", f"{revision}:{rel}")
    if proc.returncode:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="colocate-diff-config-") as tmp:
        path = Path(tmp) / config.CONFIG_NAME
        path.write_bytes(proc.stdout)
        try:
            config.load(path)
        except InputError as exc:
            # An older revision's file the package no longer reads: checked as before, by the
            # working tree's, and said so (its findings may then be the new names').
            label = f"{rel} at {revision[:12]}"
            where = label + (f":{exc.where}" if exc.where else "")
            reason = exc.reason.replace(str(path), label)  # further errors name the temporary copy
            lines = f"{where}: {reason}\nits dist/ is checked against the working tree's colocate.yaml".splitlines()
            print("\n".join(f"colocate: warning: {line}" for line in escape_lines(lines)), file=sys.stderr)
            yield None
            return
        yield path


def _applications(root: Path) -> dict[str, str]:
    """folder -> Application from dist/index.yaml (empty when there is none). What diff reads of
    it is checked, not the whole DistIndex schema (``colocate check`` validates that): an older
    revision's index stays readable. Anything else is bad input naming the file and the key."""
    path = root / INDEX_FILE
    if not path.is_file():
        return {}
    file = str(path)
    try:
        index = safe_yaml.load(path.read_bytes().decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
        raise InputError(file, "", f"is not the YAML synth writes ({type(exc).__name__}); run `colocate synth` "
                         "and commit dist/") from None
    except OSError as exc:
        raise InputError(file, "", f"cannot be read: {exc.strerror}") from None
    if index is None:
        return {}
    if not isinstance(index, dict):
        raise InputError(file, "", f"holds a {type(index).__name__}, not a DistIndex mapping; run `colocate synth`")
    folders = index.get("folders")
    if folders is None:
        return {}
    if not isinstance(folders, dict):
        raise InputError(file, "folders", f"is a {type(folders).__name__}, not a mapping of folder to entry")
    out = {}
    for folder, entry in folders.items():
        if not isinstance(folder, str) or not isinstance(entry, dict):
            raise InputError(file, f"folders.{folder}", "must be a folder name with a mapping (argocdApplication, "
                             "objects)")
        if "argocdApplication" in entry:
            app = entry["argocdApplication"]
            if not isinstance(app, str) or not app:
                raise InputError(file, f"folders.{folder}.argocdApplication", f"is {app!r:.60}, not an Application name")
            out[folder] = app
    return out


@contextmanager
def named(label: str, root: Path, dist: str) -> Iterator[None]:
    """An InputError about a file under ``root`` (``dist`` of a revision, extracted to a temporary
    folder) names it as in the repository, after the revision: ``HEAD~1: dist/index.yaml``, and
    ``HEAD~1: index.yaml`` for ``--dist .`` (never the temporary folder's name)."""
    try:
        yield
    except InputError as exc:
        file = Path(exc.file)
        shown = file.relative_to(root).as_posix() if file.is_relative_to(root) else exc.file
        folder = Path(dist).as_posix()
        raise InputError(f"{label}: {shown if folder == '.' else f'{folder}/{shown}'}", exc.where, exc.reason) from None


def load(label: str, root: Path, dist: str = "dist") -> Tree:
    """Every object under ``root`` (``dist`` of a revision) except the index. Two objects with one
    key are bad input."""
    with named(label, root, dist):
        apps = _applications(root)
    objects: dict[Key, Entry] = {}
    if root.is_dir():
        with named(label, root, dist):
            docs = manifests.load([root])
        for doc in docs:
            if doc.kind == "DistIndex":
                continue
            rel = Path(doc.file).relative_to(root).as_posix()
            folder = rel.rpartition("/")[0]
            # Node provisioning files have no metadata: their file is their identity.
            key = Key(doc.group, doc.kind, doc.namespace, doc.name or rel)
            if key in objects:
                raise ColocateError(f"{label}: {key} is defined twice ({objects[key].file}, {rel})")
            objects[key] = Entry(key, rel, apps.get(folder, f"dist/{folder}"), doc.obj)
    return Tree(label, root, objects)

"""Turn synthesized charts into dist/: one file per object, stable names and key order,
an index with the release version, written atomically.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml

from colocate.base import safe_yaml
from colocate.errors import InputError
from colocate.base.layout import INDEX_API_VERSION, INDEX_FILE, object_filename
from colocate.model.objects import ObjectView

_TOP_ORDER = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True)
class Manifest(ObjectView):
    """One object and the dist/ folder it belongs to."""

    folder: str
    obj: dict[str, Any]

    @property
    def filename(self) -> str:
        """``deployment.online.recsys-inference.yaml`` (colocate.base.layout.object_filename)."""
        return object_filename(self.kind, self.namespace, self.name)

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.filename}"


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def canonical(obj: dict[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata first (as kubectl prints them), then every key sorted."""
    head = {k: _sorted(obj[k]) for k in _TOP_ORDER if k in obj}
    return {**head, **{k: _sorted(obj[k]) for k in sorted(obj) if k not in _TOP_ORDER}}


class _Dumper(yaml.SafeDumper):
    """Block style, and lists indented under their key as kubectl and most linters expect."""

    def increase_indent(self, flow: bool = False, indentless: bool = False):
        return super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)


def index(manifests: list[Manifest], release: str, kubernetes_version: str, apps: dict[str, str],
          rendered: Mapping[str, Mapping[str, str]] | None = None) -> dict:
    """dist/index.yaml: what dist/ holds at which release. ``apps`` maps folder -> Application;
    ``rendered`` folder -> how its objects were rendered (colocate/synth/vendor_render.py: renderer, vendored
    source, digests of the inputs and of the files)."""
    rendered = rendered or {}
    folders: dict[str, dict[str, Any]] = {}
    for m in manifests:
        entry = folders.setdefault(m.folder, {**({"argocdApplication": apps[m.folder]} if m.folder in apps else {}),
                                              **({"rendered": dict(rendered[m.folder])} if m.folder in rendered else {}),
                                              "objects": []})
        entry["objects"].append({"file": m.filename, "apiVersion": m.obj["apiVersion"], "kind": m.kind,
                                 **({"namespace": m.namespace} if m.namespace else {}),
                                 **({"name": m.name} if m.name else {})})
    return {
        "apiVersion": INDEX_API_VERSION,
        "kind": "DistIndex",
        "metadata": {"name": "colocate"},
        "release": release,
        "kubernetesVersion": kubernetes_version,
        "objectCount": len(manifests),
        "folders": {k: {**folders[k], "objects": sorted(folders[k]["objects"], key=lambda o: o["file"])}
                    for k in sorted(folders)},
    }


def render(manifests: Iterable[Manifest], index_doc: dict, extra: Mapping[str, str] | None = None,
           texts: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every dist/ file's relative path and text: the manifests, and ``extra`` files that are
    not manifests (containerd's TOML). The index lists the extra files too, under ``files`` of
    the deepest folder holding each, so that a file nobody listed is known not to be ours
    (foreign_files). ``texts``: manifests' texts already dumped, by path. Raises on two files
    with one path."""
    files: dict[str, str] = {}
    texts = texts or {}
    for m in manifests:
        if m.path in files:
            raise ValueError(f"two objects would be written to dist/{m.path}: "
                             f"{m.kind} {m.namespace}/{m.name} is defined twice")
        files[m.path] = texts.get(m.path) or dump(canonical(m.obj))
    folders = {name: {**entry} for name, entry in index_doc.get("folders", {}).items()}
    for path, text in sorted((extra or {}).items()):
        if path in files or path == INDEX_FILE or path.endswith((".yaml", ".yml")):
            raise ValueError(f"dist/{path}: an extra file must not be, or look like, a manifest")
        owner = max((name for name in folders if path.startswith(f"{name}/")), key=len, default=None)
        if owner is None:
            owner = path.rpartition("/")[0]
            folders[owner] = {"objects": []}
        folders[owner]["files"] = [*folders[owner].get("files", ()), path.removeprefix(f"{owner}/")]
        files[path] = text
    files[INDEX_FILE] = dump({**index_doc, "folders": {k: folders[k] for k in sorted(folders)}})
    return dict(sorted(files.items()))


@dataclass(frozen=True)
class TreeDiff:
    """How a dist/ folder on disk differs from the files synth would write (relative paths)."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    modified: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.modified)


def read_tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path -> text); empty when the folder is missing."""
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def compare_tree(files: dict[str, str], outdir: Path) -> TreeDiff:
    """What ``write_tree(files, outdir)`` would change. Reads only."""
    on_disk = read_tree(outdir)
    return TreeDiff(added=tuple(sorted(set(files) - set(on_disk))),
                    removed=tuple(sorted(set(on_disk) - set(files))),
                    modified=tuple(sorted(p for p in files if p in on_disk and files[p] != on_disk[p])))


#: The non-YAML files synth wrote before the index listed them (release 2026.12.0 and earlier):
#: containerd's drop-in and registry hosts files under a node pool's folder.
_LEGACY_EXTRA = re.compile(r"^containerd/(conf\.d/[^/]+\.toml|certs\.d/[^/]+/hosts\.toml)$")


def foreign_files(folder: Path) -> list[str] | None:
    """What in ``folder`` an earlier synth did not write: None when its index.yaml is not our
    DistIndex, else every path (relative, sorted) that is not index.yaml, an object the index
    lists, or an extra file the index lists (``files`` of its folder; an index written before
    it listed them: containerd's files of a node pool, _LEGACY_EXTRA)."""
    try:
        doc = safe_yaml.load((folder / INDEX_FILE).read_text())
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    if not (isinstance(doc, dict) and doc.get("kind") == "DistIndex" and doc.get("apiVersion") == INDEX_API_VERSION):
        return None
    listed = doc.get("folders") if isinstance(doc.get("folders"), dict) else {}
    listed = {str(name): entry for name, entry in listed.items() if isinstance(entry, dict)}
    ours = {f"{name}/{o.get('file')}" for name, entry in listed.items()
            for o in entry.get("objects") or () if isinstance(o, dict)}
    ours |= {f"{name}/{f}" for name, entry in listed.items() for f in entry.get("files") or () if isinstance(f, str)}
    legacy = not any("files" in entry for entry in listed.values())
    out = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_dir() and not path.is_symlink():
            continue
        extra = legacy and path.is_file() and not path.is_symlink() and any(
            rel.startswith(f"{name}/") and _LEGACY_EXTRA.match(rel.removeprefix(f"{name}/")) for name in listed)
        if rel != INDEX_FILE and rel not in ours and not extra:
            out.append(rel)
    return out


def is_ours(folder: Path) -> bool:
    """An earlier synth output, and nothing else: every file in it is one synth writes."""
    return foreign_files(folder) == []


def check_outdir(outdir: Path) -> None:
    """synth replaces the whole folder: refuse one that holds anything but an earlier dist/.
    Messages name ``outdir`` as given."""
    where = outdir.resolve()
    if where.exists() and not where.is_dir():
        raise InputError(str(outdir), "", "is a file; --outdir must be a folder")
    _writable(outdir, where)
    if not where.is_dir() or not any(where.iterdir()):
        return
    foreign = foreign_files(where)
    if foreign is None:
        raise InputError(str(outdir), "", "is not empty and is not an earlier colocate dist/ (no index.yaml of kind "
                         "DistIndex); synth replaces the whole folder, so name a new or empty one")
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise InputError(str(outdir), "", f"is an earlier colocate dist/ but also holds files synth did not write "
                         f"({shown}); synth replaces the whole folder, so move them out or name another folder")


def _writable(outdir: Path, where: Path) -> None:
    """synth writes the new tree next to ``where`` and renames it in: make sure that folder (or
    the nearest one that exists, where it would be created) takes a new folder, before the
    build. Writes nothing that stays."""
    parent = where.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    why = "its parent is not a folder" if not parent.is_dir() else ""
    if not why:
        try:
            with _signals_deferred():  # a Ctrl-C between the two leaves no probe behind
                os.rmdir(tempfile.mkdtemp(prefix=f".{where.name}.probe-", dir=parent))
        except OSError as exc:
            why = f"{parent}: {exc.strerror}"
    if why:
        raise InputError(str(outdir), "", f"cannot be written ({why}); name a folder you can write with --outdir")


def _leftovers(outdir: Path) -> list[Path]:
    """Folders an interrupted synth left next to ``outdir``: ``<name>.old-<pid>`` and ``<name>.tmp-*``
    holding only what synth writes (or nothing yet); a user's folder of that name is kept."""
    pattern = re.compile(rf"^{re.escape(outdir.name)}\.(old-\d+|tmp-[A-Za-z0-9_]+)$")
    return [p for p in outdir.parent.iterdir()
            if pattern.match(p.name) and p.is_dir() and not p.is_symlink() and (not any(p.iterdir()) or is_ours(p))]


def _remove(tree: Path) -> None:
    """Delete a tree synth wrote, index.yaml last: interrupted, it is still recognisably ours
    (is_ours) and the next synth removes the rest."""
    if not tree.is_dir():
        return
    with contextlib.suppress(OSError):  # what stays is removed by the next synth
        for child in tree.iterdir():
            if child.name == INDEX_FILE:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        (tree / INDEX_FILE).unlink(missing_ok=True)
        tree.rmdir()


def write_tree(files: dict[str, str], outdir: Path, on_swap: Callable[[], None] | None = None) -> None:
    """Replace ``outdir`` with exactly ``files``. The new tree is written next to it first and
    swapped in with two renames; SIGINT and SIGTERM wait until both are done, and if the second
    fails the first is undone, so ``outdir`` is always the old tree or the new one. Never touches
    a folder that is not an earlier synth output (check_outdir)."""
    check_outdir(outdir)
    outdir = outdir.resolve()
    outdir.parent.mkdir(parents=True, exist_ok=True)
    with _locked(outdir.parent):
        _write_tree(files, outdir, on_swap)


@contextlib.contextmanager
def _locked(folder: Path):
    """One writer at a time in ``folder``: an flock on the folder itself (no lock file to leave
    behind; the kernel drops it when the process dies). A second synth waits for the first,
    instead of removing its live staging folder as a leftover."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _write_tree(files: dict[str, str], outdir: Path, on_swap: Callable[[], None] | None) -> None:
    check_outdir(outdir)  # again, under the lock: another synth may have written meanwhile
    for leftover in _leftovers(outdir):
        _remove(leftover)
    staging = Path(tempfile.mkdtemp(prefix=f"{outdir.name}.tmp-", dir=outdir.parent))
    old = outdir.parent / f"{outdir.name}.old-{os.getpid()}"
    swapped = False
    try:
        # index.yaml first: a staging folder cut short is then recognisably ours (_leftovers).
        for rel in sorted(files, key=lambda rel: rel != INDEX_FILE):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[rel])
            os.chmod(path, 0o644)
        os.chmod(staging, 0o755)
        with _signals_deferred():
            moved = False
            if outdir.exists():
                outdir.rename(old)
                moved = True
            try:
                staging.rename(outdir)
            except BaseException:
                if moved:
                    old.rename(outdir)
                raise
            swapped = True
            if on_swap:
                on_swap()  # before a deferred signal is delivered: the caller knows the new tree is in
    finally:
        # Also when a deferred Ctrl-C arrives: the old tree is gone only once the new one is in place.
        if swapped:
            _remove(old)
        _remove(staging)


@contextlib.contextmanager
def _signals_deferred():
    """Hold SIGINT and SIGTERM until the block ends, then deliver them to the handlers that were
    in place (only the main thread can set handlers; elsewhere the block runs as is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: caught.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            # None: a handler installed outside Python, which cannot be put back; use the default.
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for sig in dict.fromkeys(caught):
            signal.raise_signal(sig)

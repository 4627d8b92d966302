"""A kept base: the state of a cluster that has synced a dist/ and settled, kept in the user's cache
folder so that the next run with the same base restores it in seconds instead of syncing dist/
from nothing (docs/simulate.md, "A kept base").

An entry is one file, ``<cache>/simulate/v<FORMAT>/<key>``, sealed like the verdict cache's
(private_cache: a regular file of this user, size-capped, its keyed digest checked), holding a tar
of:

- ``etcd.db``: ``etcdctl snapshot save`` of the settled cluster (every API object, Argo CD's
  Applications and their status, Kueue's Workloads, the nodes kwok answers for);
- ``pki/``: the API server's certificate and the service account key (the tokens in etcd are
  signed with it) and the admin token;
- ``repo/``: Argo CD's repository copy, whose commit the Applications last synced;
- ``kueue/certs/``: the webhook's CA, which the webhook configurations in etcd name;
- ``state.json``: what the run knew that the cluster does not say (the addresses it gave its
  processes, the node -> pool map, the root Application's refusals).

The key is a digest of everything the base's state follows from: the base's dist/, colocate.yaml,
the scenario's node counts and whether the resubmitter runs, the components' build stamps and
colocate's own code. Anything else is a different key; an entry that cannot be trusted is rebuilt,
with a line that says why."""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from colocate.base import compiled, private_cache

#: Changes whenever an entry's layout does: older entries are then never read.
FORMAT = 1
MAGIC = b"colocate-simulate-base %d\n" % FORMAT
_DIGEST = 32
#: The largest entry read: the reference's snapshot is about 30 MB.
MAX_ENTRY = 512 << 20
#: A base kept longer is rebuilt: kueue.make_certificates' certificates are valid for 2 days.
MAX_AGE = 24 * 3600
#: How many bases are kept at most (about 25 MiB each for the reference).
KEEP = 6
#: What the kept folders of a run hold, below the run's folder.
PARTS = ("etcd.db", "pki", "repo", "kueue/certs", "state.json")
_PACKAGE = Path(__file__).resolve().parents[1]


def folder() -> Path:
    return private_cache.root() / "simulate" / f"v{FORMAT}"


def key(dist: Path, config_text: str, node_counts: Mapping[str, int], resubmitting: bool,
        stamps: Mapping[str, str]) -> str:
    """The digest a kept base is found by (module docstring)."""
    h = hashlib.blake2b(digest_size=20)

    def add(label: str, data: bytes) -> None:
        h.update(label.encode() + b"\0" + len(data).to_bytes(8, "little") + data)

    for path in sorted(p for p in dist.rglob("*") if p.is_file()):
        add(f"dist/{path.relative_to(dist).as_posix()}", path.read_bytes())
    add("colocate.yaml", config_text.encode())
    add("nodes", json.dumps(sorted(node_counts.items())).encode())
    add("resubmitter", b"1" if resubmitting else b"0")
    add("stamps", json.dumps(sorted(stamps.items())).encode())
    # colocate's own code: a checkout's version number does not move with its edits.
    for path in sorted(_PACKAGE.rglob("*.py")):
        add(path.relative_to(_PACKAGE).as_posix(), path.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Found:
    """A kept base unpacked into ``path`` (a run's own folder), with its state."""

    path: Path
    state: dict[str, Any]


def load(entry_key: str, log) -> Found | None:
    """The kept base of ``entry_key`` unpacked into a new temporary folder (the caller removes it),
    or None (none kept yet, or one not to be trusted: said with ``log``, and rebuilt by the run)."""
    into = Path(tempfile.mkdtemp(prefix="colocate-kept-base-"))
    found = _load(folder() / entry_key, into, log)
    if found is None:
        shutil.rmtree(into, ignore_errors=True)
    return found


def _load(path: Path, into: Path, log) -> Found | None:
    if not os.path.lexists(path):
        return None
    if private_cache.folder_problem(private_cache.root()):
        return None
    try:
        age = time.time() - os.lstat(path).st_mtime
    except OSError:
        return None
    if age > MAX_AGE:
        log(f"simulate: kept base {path} not used: it is {age / 3600:.0f} h old (Kueue's webhook certificate in "
            f"it is valid for two days); the base is synced from nothing and kept again")
        return None
    data = private_cache.read_entry(path, MAX_ENTRY)
    if data is None:  # a link, FIFO, another user's or too large: private_cache said which
        log(f"simulate: kept base {path} not used: it cannot be trusted; the base is synced from nothing")
        return None
    body = compiled.unseal(MAGIC, data, _DIGEST)
    if body is None:
        log(f"simulate: kept base {path} not used: truncated, damaged or not written by you (its keyed digest "
            "does not match); the base is synced from nothing and kept again")
        return None
    try:
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:") as tar:
            tar.extractall(into, filter="data")
        state = json.loads((into / "state.json").read_text())
    except (tarfile.TarError, OSError, ValueError) as exc:
        log(f"simulate: kept base {path} not used: it does not unpack ({exc}); the base is synced from nothing")
        return None
    return Found(into, state)


def save(entry_key: str, run_folder: Path, state: Mapping[str, Any], log) -> bool:
    """Keep ``run_folder``'s parts (PARTS, the snapshot already taken into it) and ``state`` as the
    entry of ``entry_key``: written to a temporary file and renamed into place, so that a run
    reading it at the same time sees the whole entry or none. False when it cannot be written."""
    (run_folder / "state.json").write_text(json.dumps(state, sort_keys=True))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for part in PARTS:
            if (run_folder / part).exists():
                tar.add(run_folder / part, arcname=part, filter=_plain)
    data = compiled.seal(MAGIC, buffer.getvalue(), _DIGEST)
    if len(data) > MAX_ENTRY:
        log(f"simulate: the base is not kept: {len(data)} bytes is more than {MAX_ENTRY}")
        return False
    root = private_cache.root()
    if private_cache.folder_problem(root):
        return False
    private_cache.make_folders(folder(), root)
    written = private_cache.write_entry(folder() / entry_key, data, root)
    if written:
        log(f"simulate: base kept as {folder() / entry_key} ({len(data) >> 20} MiB)")
        _prune(entry_key)
    return written


def _prune(fresh: str) -> None:
    """Remove the entries past MAX_AGE, and all but the KEEP newest: a base per branch or pull
    request is worth keeping for a while, not forever."""
    entries = []
    for path in folder().iterdir():
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if path.name != fresh and not path.name.startswith(".tmp-"):
            entries.append((st.st_mtime, path))
    entries.sort(reverse=True)
    now = time.time()
    for index, (mtime, path) in enumerate(entries):
        if index >= KEEP - 1 or now - mtime > MAX_AGE:
            try:
                path.unlink()
            except OSError:
                pass


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Regular files and folders only, owned by nobody in particular (what extracts as this user)."""
    if not (info.isfile() or info.isdir()):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


"""The verdict cache of ``colocate check`` (docs/check-cache.md).

Two kinds of entry, each a file named by its key:

* **file**: one checked file's objects (as parsed), kubeconform's verdict on them, the findings
  of the rules that judge each object on its own (under the context they were judged in) and
  the lines of the fields findings named. Key: the environment (below), the file's path as
  given and its bytes.
* **tree**: a whole result, cross-object rules included. Key: the environment, every checked
  file's key in order, and the folders left out.

The environment is everything else a verdict depends on: the cache format, Python, colocate's
own code, rules and schemas (every file of the package), the kubeconform binary (its bytes),
kubernetes-validate's schemas (its installed file list with their hashes), the versions and
installed files of jsonschema and PyYAML (which bundles libyaml), the configuration
file's bytes, the NodePool descriptions the capacity rules may read (--cluster, else the
repository's dist/nodes/), the working folder and the --exclude patterns.

An entry is JSON behind a header (magic, format, HMAC-SHA256 of the body with the user's key,
colocate/base/private_cache.py; a docs entry's JSON is followed by a new line and its objects' JSON,
decoded one by one) and holds its own key: a forged, truncated, corrupt or foreign entry (another key, another format, not JSON of the expected
shape) is ignored and recomputed, never trusted. Entries are written to a temporary file and
renamed into place (os.replace), so concurrent runs never read a partial entry. A thread writes
them while the check goes on (file system calls release the GIL); :meth:`Store.flush` waits for it.
"""
from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from colocate.base import compiled, private_cache

#: Changes whenever an entry's layout does: older entries are then never read.
FORMAT = 6
MAGIC = b"colocate-check-cache %d\n" % FORMAT
_DIGEST = 32


#: What a verdict cache folder holds (one an older colocate made has no CACHEDIR.TAG).
_OURS = re.compile(r"(v[0-9]+|\.tmp-.*)\Z")


def default_dir() -> Path:
    """``check/`` of the user's cache folder (private_cache.root)."""
    return private_cache.root() / "check"


def usable_dir(path: Path) -> str | None:
    """Why ``path`` cannot hold the cache (an existing non-folder, a folder that holds other
    things than a cache, an unwritable folder), or None. Touches nothing: a folder that does not
    exist yet is made on the first write."""
    if os.path.lexists(path) and not path.is_dir():
        return "exists and is not a folder"
    if path.is_dir() and (problem := private_cache.not_dedicated(path, _OURS)):
        return problem
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a folder"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable"
    return None


def _hash(*parts: bytes | str) -> str:
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


@dataclass
class Stats:
    """What the cache did in one run, for ``check --timings``."""

    hits: int = 0
    misses: int = 0
    ignored: int = 0
    writes: int = 0
    write_errors: int = 0
    notes: list[str] = field(default_factory=list)


class Store:
    """Entries under ``root``/v<FORMAT>/<kind>/<first two hex digits>/<key>."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.stats = Stats()
        #: A folder another user owns or can write is neither read nor written (said on stderr).
        user = private_cache.root()
        self.trusted = private_cache.folder_problem(self.root) is None and not (
            self.root.is_relative_to(user) and private_cache.folder_problem(user))
        self._queue: queue.SimpleQueue | None = None
        self._writer: threading.Thread | None = None

    def _path(self, kind: str, key: str) -> Path:
        return self.root / f"v{FORMAT}" / kind / key[:2] / key

    def get(self, kind: str, key: str) -> Any:
        """The entry's value, or None when there is none or it cannot be trusted."""
        data = private_cache.read_entry(self._path(kind, key)) if self.trusted else None
        if data is None:
            self.stats.misses += 1
            return None
        value = _decode(data, kind, key)
        if value is None:
            self.stats.ignored += 1
        else:
            self.stats.hits += 1
        return value

    def get_blob(self, kind: str, key: str) -> tuple[Any, bytes] | None:
        """A :meth:`put_blob` entry's value and bytes, or None (as :meth:`get`)."""
        data = private_cache.read_entry(self._path(kind, key)) if self.trusted else None
        if data is None:
            self.stats.misses += 1
            return None
        body = compiled.unseal(MAGIC, data, _DIGEST)
        head, newline, blob = body.partition(b"\n") if body is not None else (b"", b"", b"")
        value = _decode(head, kind, key, sealed=False) if newline else None
        if value is None:
            self.stats.ignored += 1
            return None
        self.stats.hits += 1
        return value, blob

    def holds_entries(self) -> bool:
        """Whether any entry of this format may be there (False: a first run, nothing to reuse)."""
        if not self.trusted:
            return False
        try:
            with os.scandir(self.root / f"v{FORMAT}") as found:
                return any(True for _ in found)
        except OSError:
            return False

    def has(self, kind: str, key: str) -> bool:
        """Whether an entry is there (not whether it can be trusted: :meth:`get` says that)."""
        return self.trusted and self._path(kind, key).is_file()

    def reject(self) -> None:
        """The entry last read whole has not the shape its reader expects: ignored after all."""
        self.stats.hits -= 1
        self.stats.ignored += 1

    def put(self, kind: str, key: str, value: Any) -> None:
        """Write an entry atomically; a cache that cannot be written is counted, never an error."""
        try:
            text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            self.stats.write_errors += 1
            return
        self.put_raw(kind, key, text)

    def put_raw(self, kind: str, key: str, value_json: str) -> None:
        """:meth:`put` of a value already serialised as JSON."""
        self._put_body(kind, key, ('["%s",%s,%s]' % (kind, json.dumps(key), value_json)).encode("utf-8", "surrogatepass"))

    def put_blob(self, kind: str, key: str, value: Any, blob: bytes) -> None:
        """An entry of a JSON value and bytes after it, handed back undecoded by :meth:`get_blob`:
        its reader decodes only the parts it needs (a file's objects, one by one)."""
        head = json.dumps([kind, key, value], separators=(",", ":"))  # compact: no new line in it
        self._put_body(kind, key, head.encode("utf-8", "surrogatepass") + b"\n" + blob)

    def _put_body(self, kind: str, key: str, body: bytes) -> None:
        if not self.trusted:
            return
        data = compiled.seal(MAGIC, body, _DIGEST)
        if self._queue is None:
            self._queue = queue.SimpleQueue()
            self._writer = threading.Thread(target=self._write_queued, name="cache-writer", daemon=True)
            self._writer.start()
        self._queue.put((self._path(kind, key), data))

    def flush(self) -> None:
        """Wait until every entry put so far is written (or counted as not writable)."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join()
            self._queue = self._writer = None

    def _write_queued(self) -> None:
        while (item := self._queue.get()) is not None:
            self._write(*item)

    def _write(self, path: Path, data: bytes) -> None:
        if private_cache.write_entry(path, data, self.root):
            self.stats.writes += 1
        else:
            self.stats.write_errors += 1


def _decode(data: bytes, kind: str, key: str, sealed: bool = True) -> Any:
    body = compiled.unseal(MAGIC, data, _DIGEST) if sealed else data
    if body is None:
        return None
    try:
        stored_kind, stored_key, value = json.loads(body)
    except (ValueError, TypeError, RecursionError):
        return None
    if stored_kind != kind or stored_key != key:
        return None
    return value


# --- the environment ---------------------------------------------------------------------------

def _tree_files(roots: Iterable[Path]) -> list[tuple[str, str]]:
    """(path, path relative to its root) of every file under the folders, caches and hidden
    files left out, in a stable order."""
    out = []
    seen: set[str] = set()
    for root in roots:
        root = root.resolve()
        if str(root) in seen or not root.is_dir():
            continue
        seen.add(str(root))
        for top, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(names):
                if not name.startswith(".") and not name.endswith((".pyc", ".pyo")):
                    path = os.path.join(top, name)
                    out.append((path, os.path.relpath(path, root)))
    return out


def _tree_digest(roots: Iterable[Path]) -> str:
    """The names and bytes of every file under the folders (colocate's code, rules and schemas),
    kept by their stat signatures (colocate.base.compiled.digest), change time included: read once
    per installation, not once per cache (a first check, or one with --cache elsewhere, hashes no
    8 MB again), and read again after any write. Not kept while a file is racily clean
    (:data:`RACY_NS`). The checked files are never known by their stat (:func:`file_keys`); an
    installation is not written through a memory mapping."""
    roots = list(roots)
    files = _tree_files(roots)
    signature = hashlib.blake2b(digest_size=20)
    now = time.time_ns()
    newest = 0
    for path, rel in files:
        try:
            st = os.stat(path)
            signature.update(f"{path}\0{rel}\0{_signature(st)}\n".encode())
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
        except OSError:
            signature.update(f"{path}\0missing\n".encode())

    def bytes_digest() -> str:
        h = hashlib.blake2b(digest_size=20)
        for path, rel in files:
            try:
                data = Path(path).read_bytes()
            except OSError:
                data = b"\0unreadable"
            h.update(_hash(rel, data).encode())
        return h.hexdigest()
    return compiled.digest("digest-tree", "\0".join(map(str, roots)), signature.hexdigest(), bytes_digest,
                           keep=newest < now - RACY_NS)


def _file_digest(path: Path) -> str:
    """The bytes' digest of a large file (kubeconform, kubernetes-validate's RECORD), kept by its
    stat signature."""
    try:
        st = path.stat()
    except OSError:
        return "missing"

    def bytes_digest() -> str:
        h = hashlib.blake2b(digest_size=20)
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    where = str(path.resolve())
    signature = _hash("binary", where, *map(str, _signature(st)))
    # One kept digest per file: kubeconform's and each RECORD's do not replace each other.
    return compiled.digest(f"digest-{path.name}", where, signature, bytes_digest,
                           keep=max(st.st_mtime_ns, st.st_ctime_ns) < time.time_ns() - RACY_NS)


def _kubernetes_validate() -> str:
    """kubernetes-validate's installed files and their hashes (its RECORD), which the core
    schemas kubeconform reads are copied from; else the name, size and time of each schema."""
    import importlib.util

    # Found, not imported: importing kubernetes_validate takes 0.15 s.
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.origin:
        return "absent"
    package = Path(spec.origin).resolve().parent
    schemas = package / "kubernetes-json-schema"
    for record in sorted(package.parent.glob("kubernetes_validate-*.dist-info/RECORD")):
        if record.is_file():
            return _hash("record", _file_digest(record))  # 2.6 MB: kept by its stat, as the binary's
        break
    h = hashlib.blake2b(digest_size=20)
    for path in sorted(schemas.rglob("*.json")):
        st = path.stat()
        h.update(f"{path.relative_to(schemas)}\0{_signature(st)}\n".encode())
    return h.hexdigest()


def library_versions() -> str:
    """The installed jsonschema (and the schemas it bundles) and PyYAML (whose wheel bundles
    libyaml, in the C extension its RECORD hashes): an upgrade can change what validates or how a
    file parses. Their dist-info names and RECORDs, found without importing them."""
    import importlib.util

    out = []
    for module, project in (("jsonschema", "jsonschema"), ("jsonschema_specifications", "jsonschema_specifications"),
                            ("yaml", "pyyaml")):
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.origin:
            out.append(f"{module} absent")
            continue
        site = Path(spec.origin).resolve().parent.parent
        try:
            infos = sorted(n for n in os.listdir(site)
                           if n.lower().startswith(project + "-") and n.endswith(".dist-info"))
        except OSError:
            infos = []
        out.append(f"{module} " + ",".join(f"{n} {_file_digest(site / n / 'RECORD')}" for n in infos))
    return "\n".join(out)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        return f"\0unreadable: {exc.errno}".encode()


def environment(config_file: Path, cluster: Path | None, exclude: Iterable[str]) -> str:
    """The key part every entry shares (module docstring)."""
    import colocate
    from colocate.checker import kubeconform
    from colocate.base.data_files import data_path, repository

    package = Path(colocate.__file__).resolve().parent
    policies = data_path("colocate.policies", "rules").parent
    try:
        binary = kubeconform.binary()
    except kubeconform.ToolMissing:
        binary = ""
    pools = cluster if cluster is not None else repository() / "dist" / "nodes"
    pool_files = sorted(pools.rglob("*")) if pools.is_dir() else [pools]
    return _hash(
        "environment", str(FORMAT), sys.version, colocate.__version__,
        _tree_digest([package, policies]),
        binary, _file_digest(Path(binary)) if binary else "",
        _kubernetes_validate(), library_versions(),
        str(config_file.resolve()) if config_file else "", _read(config_file) if config_file else b"",
        str(pools), *(_hash(str(p), _read(p)) for p in pool_files if not p.is_dir()),
        os.getcwd(), str(repository()), "\0".join(exclude),
    )


def file_key(env: str, path: Path, named: bool) -> str | None:
    """A checked file's key: None when it cannot be read (the check then reports it)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    # The bytes by SHA-256, which the CPU computes (SHA-NI): a third of BLAKE2b's time on 24 MB.
    return _hash("file", env, str(path), "named" if named else "found", hashlib.sha256(data).digest())


#: A file changed this close (in nanoseconds) to when its bytes were read is "racily clean", as
#: git calls it: it may change again within the file system's time granularity (2 s on FAT, 1 s
#: or coarser on some network file systems) and keep the stat signature it was read with. An
#: installation's digest (:func:`_tree_digest`, :func:`_file_digest`) is then not remembered by
#: stat, and its files are read and hashed again on the next run.
RACY_NS = 2_000_000_000


def _signature(st: os.stat_result) -> list[int]:
    """What a write, a replace or a move changes: size, modification and change times, inode and
    device. The change time (ctime) cannot be set back by a program (os.utime sets mtime only)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def file_keys(store: Store, env: str, paths: list[Path], named: set[str], given: Iterable[Any]
              ) -> tuple[list[str | None], dict[str, str]]:
    """Every checked file's key (:func:`file_key`), and for each file whose key changed the key it
    had last time (its per-object findings may be reused object by object).

    Every file is read and hashed on every run (24 MB of 200 files in 0.02 s): a stat signature
    cannot tell every write. A write through a shared memory mapping to a page already dirty keeps
    the size, both times and the inode (Linux updates the times when a clean page is first
    written). The index entry (key: environment and the paths named on the command line) keeps
    only each file's last key. A corrupt or foreign index entry is ignored."""
    index_key = _hash("index", env, *map(str, given))
    value = store.get("index", index_key)
    known: dict[str, str] = {}
    if isinstance(value, dict):
        if all(isinstance(v, str) for v in value.values()):
            known = value
        else:
            store.reject()
    keys: list[str | None] = []
    previous: dict[str, str] = {}
    kept: dict[str, str] = {}
    for path in paths:
        file = str(path)
        key = file_key(env, path, file in named)
        keys.append(key)
        was = known.get(file)
        if was is not None and was != key:
            previous[file] = was
        if key is not None:
            kept[file] = key
    if kept != known:
        store.put("index", index_key, kept)
    return keys, previous


def tree_key(env: str, file_keys: list[str | None], skipped: Iterable[Any]) -> str | None:
    if any(k is None for k in file_keys):
        return None
    return _hash("tree", env, *file_keys, json.dumps([list(map(str, (s.path, s.reason, s.hint))) for s in skipped]))


def rule_key(env: str, context: str, rule_id: str, inputs: list[tuple[str, str]]) -> str:
    """A cross-object rule's findings: the environment, the context, and the digest of what it
    reads of each file (checker.Reads) in order."""
    return _hash("rule", env, context, rule_id, *(f"{file}\0{digest}" for file, digest in inputs))


def context_key(*parts: Any) -> str:
    """The context the per-object rules judged in (namespace tiers, node pools, settings)."""
    return _hash("context", repr(parts))

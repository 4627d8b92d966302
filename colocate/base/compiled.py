"""Data colocate ships (the rule files, the metric catalog), read once per installation.

Parsing and validating the rule files, and the 390 KB metric catalog, cost a fifth of a second
of every ``check``; loading their parsed form as JSON costs a few milliseconds. As Python
keeps bytecode, :func:`load` keeps that form under ``resources.cache_dir()/compiled/``, named by
the bytes of the source files and of the modules that read them: an edited rule file, or a
changed reader, gives another name, so a kept form is never stale. An entry carries the digest
of its body: a truncated or corrupt one is read afresh, never trusted, and a folder that cannot
be written only costs the parse. The digests of the installation's files the verdict cache's
keys hold are kept here too (:func:`digest`): they describe the installation, not a checked tree.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

from colocate.base.data_files import cache_dir

#: Changes when the entries' layout does.
FORMAT = b"colocate-compiled 1\n"


def folder() -> Path:
    return cache_dir() / "compiled"


def _name(kind: str, sources: Iterable[Path], readers: Iterable[Path]) -> str:
    h = hashlib.blake2b(FORMAT, digest_size=16)
    for path in (*sources, *readers):
        data = path.read_bytes()
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    return f"{kind}-{h.hexdigest()}.json"


def load(kind: str, sources: list[Path], readers: list[Path], parse: Callable[[], Any],
         valid: Callable[[Any], bool]) -> Any:
    """``parse()``'s value (JSON data), from the kept form when there is a sound one that ``valid``
    accepts; else parsed, and kept. An error of ``parse`` (a malformed file) is raised and nothing
    is kept. A source that cannot be read is left to ``parse`` to report."""
    try:
        name = _name(kind, sources, readers)
    except OSError:
        return parse()
    return _kept_or(folder() / name, kind, parse, valid)


def digest(kind: str, signature: str, compute: Callable[[], str]) -> str:
    """``compute()``, a digest of files of the installation (colocate's code, the kubeconform
    binary), kept under their stat ``signature`` (path, size, times, inode), as git's index keeps
    a file's hash: a changed file has another signature, so the bytes are read again."""
    name = f"{kind}-{hashlib.blake2b(signature.encode('utf-8', 'surrogateescape'), digest_size=16).hexdigest()}.json"
    return _kept_or(folder() / name, kind, compute, lambda value: isinstance(value, str))


def _kept_or(path: Path, kind: str, make: Callable[[], Any], valid: Callable[[Any], bool]) -> Any:
    try:
        data = path.read_bytes()
    except OSError:
        data = b""
    body = unseal(FORMAT, data)
    if body is not None:
        try:
            value = json.loads(body)
            if valid(value):
                return value
        except (ValueError, TypeError, KeyError, RecursionError):
            pass
    value = make()
    _keep(path, kind, value)
    return value


def _keep(path: Path, kind: str, value: Any) -> None:
    """Write the entry and remove the older ones of ``kind``; a failure costs nothing."""
    try:
        body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        if json.loads(body) != value:  # not JSON data (a tuple, a date, a number as a key): kept it would differ
            return
    except (TypeError, ValueError):
        return
    if write_atomically(path, seal(FORMAT, body)):
        for old in path.parent.glob(f"{kind}-*.json"):
            if old != path:
                old.unlink(missing_ok=True)


def seal(magic: bytes, body: bytes, digest_size: int = 16) -> bytes:
    """A kept file's bytes: ``magic`` (a line naming the format), the body's BLAKE2b digest on a
    line of its own, then the body."""
    return magic + hashlib.blake2b(body, digest_size=digest_size).hexdigest().encode() + b"\n" + body


def unseal(magic: bytes, data: bytes, digest_size: int = 16) -> bytes | None:
    """The body :func:`seal` wrote, or None when the format or the digest does not match (a
    foreign, truncated or damaged file)."""
    if not data.startswith(magic):
        return None
    digest, newline, body = data[len(magic):].partition(b"\n")
    if not newline or digest != hashlib.blake2b(body, digest_size=digest_size).hexdigest().encode():
        return None
    return body


def write_atomically(path: Path, data: bytes) -> bool:
    """Write ``data`` to a temporary file beside ``path`` and rename it into place (os.replace), so
    that a reader sees the old file or the new one, never part of one. False when it cannot."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
        tmp = None
        return True
    except (OSError, ValueError):
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass

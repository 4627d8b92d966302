"""Data colocate ships (the rule files, the metric catalog), read once per installation.

Parsing and validating the rule files, and the 390 KB metric catalog, cost a fifth of a second
of every ``check``; loading their parsed form as JSON costs a few milliseconds. As Python
keeps bytecode, :func:`load` keeps that form under ``compiled/`` of the user's cache folder
(colocate/base/private_cache.py: never in a working tree), named by the user's key, the folder
the sources are in and the bytes of the source files and of the modules that read them: an edited
rule file, or a changed reader, gives another name, so a kept form is never stale, and a checkout
only ever uses a form it parsed itself. An entry carries the keyed digest of its body: a
truncated, corrupt or forged one is read afresh, never trusted, and a folder that cannot be
written only costs the parse. The digests of the installation's files the verdict cache's keys
hold are kept here too (:func:`digest`): they describe the installation, not a checked tree.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any, Callable

from colocate.base import private_cache

#: Changes when the entries' layout does.
FORMAT = b"colocate-compiled 3\n"


def folder() -> Path:
    return private_cache.root() / "compiled"


def _place(where: str) -> str:
    """A short name for where a kept value comes from: entries of one kind from two checkouts
    do not replace each other."""
    return hashlib.blake2b(where.encode("utf-8", "surrogateescape"), digest_size=6,
                           key=private_cache.secret()).hexdigest()


def _name(kind: str, sources: list[Path], readers: list[Path]) -> tuple[str, str]:
    """(prefix, name) of the entry of these sources' parsed form."""
    h = hashlib.blake2b(FORMAT, digest_size=16, key=private_cache.secret())
    for path in (*sources, *readers):
        data = path.read_bytes()
        h.update(f"{path.name}\0{len(data)}\0".encode())
        h.update(data)
    prefix = f"{kind}-{_place(str(sources[0].resolve().parent) if sources else '')}"
    return prefix, f"{prefix}-{h.hexdigest()}.json"


def load(kind: str, sources: list[Path], readers: list[Path], parse: Callable[[], Any],
         valid: Callable[[Any], bool]) -> Any:
    """``parse()``'s value (JSON data), from the kept form when there is a sound one that ``valid``
    accepts; else parsed, and kept. An error of ``parse`` (a malformed file) is raised and nothing
    is kept. A source that cannot be read is left to ``parse`` to report."""
    try:
        prefix, name = _name(kind, sources, readers)
    except OSError:
        return parse()
    return _kept_or(folder() / name, prefix, parse, valid)


def digest(kind: str, place: str, signature: str, compute: Callable[[], str], keep: bool = True) -> str:
    """``compute()``, a digest of files of the installation (colocate's code, the kubeconform
    binary) at ``place``, kept under their stat ``signature`` (path, size, modification and change
    times, inode), as git's index keeps a file's hash: a changed file has another signature, so
    the bytes are read again. ``keep`` False (a file changed too recently to trust its stat): not
    kept, and computed again next time."""
    if not keep:
        return compute()
    prefix = f"{kind}-{_place(place)}"
    name = f"{prefix}-{hashlib.blake2b(signature.encode('utf-8', 'surrogateescape'), digest_size=16).hexdigest()}.json"
    return _kept_or(folder() / name, prefix, compute, lambda value: isinstance(value, str))


def _kept_or(path: Path, prefix: str, make: Callable[[], Any], valid: Callable[[Any], bool]) -> Any:
    if private_cache.folder_problem(private_cache.root()):
        return make()
    body = unseal(FORMAT, private_cache.read_entry(path) or b"")
    if body is not None:
        try:
            value = json.loads(body)
            if valid(value):
                return value
        except (ValueError, TypeError, KeyError, RecursionError):
            pass
    value = make()
    _keep(path, prefix, value)
    return value


def _keep(path: Path, prefix: str, value: Any) -> None:
    """Write the entry and remove the older ones of ``prefix``; a failure costs nothing."""
    try:
        body = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        if json.loads(body) != value:  # not JSON data (a tuple, a date, a number as a key): kept it would differ
            return
    except (TypeError, ValueError):
        return
    if private_cache.write_entry(path, seal(FORMAT, body), private_cache.root()):
        for old in path.parent.glob(f"{prefix}-*.json"):
            if old != path:
                old.unlink(missing_ok=True)


def seal(magic: bytes, body: bytes, digest_size: int = 16) -> bytes:
    """A kept file's bytes: ``magic`` (a line naming the format), the body's HMAC-SHA256 with the
    user's key (private_cache.secret), ``digest_size`` bytes of it in hex on a line of its own,
    then the body."""
    return magic + _mac(body, digest_size) + b"\n" + body


def _mac(body: bytes, digest_size: int) -> bytes:
    # HMAC-SHA256, not keyed BLAKE2b: the CPU's SHA extensions make it twice as fast on the 16 MB
    # of entries a one-file re-check of 10,000 objects reads.
    return hmac.digest(private_cache.secret(), body, "sha256")[:digest_size].hex().encode()


def unseal(magic: bytes, data: bytes, digest_size: int = 16) -> bytes | None:
    """The body :func:`seal` wrote, or None when the format or the keyed digest does not match (a
    foreign, truncated, damaged or forged file)."""
    if not data.startswith(magic):
        return None
    digest, newline, body = data[len(magic):].partition(b"\n")
    if not newline or not hmac.compare_digest(digest, _mac(body, digest_size)):
        return None
    return body

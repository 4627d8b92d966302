"""The per-user folder colocate keeps derived data in, and what of it is trusted.

The compiled store, the verdict cache and kubeconform's schema copy live under one folder per
user: ``$COLOCATE_CACHE_DIR``, else ``$XDG_CACHE_HOME/colocate``, else ``~/.cache/colocate``, as
pip, ruff and pre-commit keep theirs. Never in a working tree: a file committed there would
reach every clone (docs/check-cache.md "Trust").

What is read from it must have been written by this user:

* entries are sealed with an HMAC-SHA256 (:func:`secret`, 32 random bytes kept in the folder,
  readable by its owner only), so nobody without that key can forge one, and their names are
  not computable from a repository;
* a folder owned by another user, or writable by others, is not used (as ssh refuses such a
  ``~/.ssh``); an entry that is a symbolic link, not a regular file, larger than
  :data:`MAX_ENTRY`, owned by another user or writable by others is ignored and rebuilt. Each is
  said once on stderr.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import sys
import tempfile
from pathlib import Path

ENV = "COLOCATE_CACHE_DIR"
#: The Cache Directory Tagging Specification's tag (https://bford.info/cachedir/): backup tools
#: skip the folder, and ``--cache`` knows a folder it may write into.
TAG_NAME = "CACHEDIR.TAG"
TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
       b"# colocate's cache (docs/check-cache.md); it can be deleted at any time.\n")
#: The largest entry read (the largest real one, a 10,000-object file's objects, is a few MB).
MAX_ENTRY = 256 << 20
_SECRET = "secret"
_SECRET_SIZE = 32

#: What the user's cache folder holds (a folder made by an older colocate has no tag).
_OURS = re.compile(r"(check|compiled|kubeconform|secret|simulate|tools|CACHEDIR\.TAG|\.tmp-.*)\Z")

_warned: set[str] = set()
_folders: dict[str, str | None] = {}
_secrets: dict[str, bytes] = {}


def root() -> Path:
    """The user's cache folder (module docstring); only absolute settings count."""
    explicit = os.environ.get(ENV, "")
    if os.path.isabs(explicit):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "colocate"


def warn(message: str) -> None:
    """Say ``message`` on stderr, once per process."""
    if message not in _warned:
        _warned.add(message)
        from colocate.base.text import escape

        print(f"colocate: warning: {escape(message)}", file=sys.stderr)


def _not_yours(st: os.stat_result, private: bool = False) -> str | None:
    if st.st_uid != os.geteuid():
        return f"is owned by user {st.st_uid}, not by you"
    if st.st_mode & (0o077 if private else 0o022):
        return "can be read or written by other users" if private else "is writable by other users"
    return None


def not_dedicated(path: Path, ours: re.Pattern) -> str | None:
    """Why the existing folder ``path`` is not one colocate may fill (it holds other things than
    names ``ours`` matches, and no CACHEDIR.TAG), or None."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if TAG_NAME in names or all(ours.match(name) for name in names):
        return None
    return (f"holds other files and no {TAG_NAME}: name an empty or new folder, dedicated to the cache "
            "(colocate writes and removes files there)")


def folder_problem(path: Path) -> str | None:
    """Why the cache folder ``path`` cannot be trusted (said once on stderr), or None, also when it
    does not exist yet (:func:`write_entry` makes it, readable by its owner only). The user's
    cache folder must also be dedicated to colocate (COLOCATE_CACHE_DIR=/ is not)."""
    key = str(path)
    if key not in _folders:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            problem = None
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror})"
        else:
            problem = "is not a folder" if not stat.S_ISDIR(st.st_mode) else _not_yours(st)
            if problem is None and path == root():
                problem = not_dedicated(path, _OURS)
        _folders[key] = problem
        if problem:
            warn(f"cache folder {path} {problem}: not used, everything is computed afresh "
                 "(make it yours and `chmod go-w` it, or remove it)")
    return _folders[key]


def read_entry(path: Path, limit: int = MAX_ENTRY, private: bool = False) -> bytes | None:
    """The bytes of the entry ``path``; None when there is none, or it is not to be trusted (a
    symbolic link, not a regular file, too large, another user's, writable by others: said on
    stderr). Opened without following a link and without blocking (a FIFO never hangs a run)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            warn(f"cache entry {path} is a symbolic link: ignored and rebuilt")
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            problem = "is not a regular file"
        elif st.st_size > limit:
            problem = f"is larger than {limit} bytes"
        else:
            problem = _not_yours(st, private)
        if problem:
            warn(f"cache entry {path} {problem}: ignored and rebuilt")
            return None
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                warn(f"cache entry {path} is larger than {limit} bytes: ignored and rebuilt")
                return None
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def make_folders(folder: Path, tagged: Path | None) -> None:
    """``mkdir -p`` with every folder made readable by its owner only (umask 002 would make
    them group-writable, and then refused); ``tagged``, when made, gets its CACHEDIR.TAG."""
    missing = []
    while not os.path.isdir(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, 0o700)
        except FileExistsError:
            continue
        if made == tagged:
            _tag(made)


def _tag(folder: Path) -> None:
    try:
        fd = os.open(folder / TAG_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    with os.fdopen(fd, "wb") as out:
        out.write(TAG)


def write_entry(path: Path, data: bytes, cache_root: Path | None = None, link: bool = False) -> bool:
    """Write ``data`` to a temporary file beside ``path`` (mode 0600) and rename it into place, so
    that a reader sees the old entry or the new one, never part of one (a link or FIFO there is
    replaced, not followed). ``cache_root``: the cache folder ``path`` is under, tagged when
    made. ``link``: only when no entry is there yet (os.link). False when it
    cannot."""
    tmp = None
    try:
        make_folders(path.parent, cache_root)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        if link:
            os.link(tmp, path)
        else:
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


def secret() -> bytes:
    """This user's key for sealing entries: 32 random bytes in the cache folder, made on first
    use. When it cannot be kept (a folder not to be trusted, or not writable), a key for this
    process only: nothing kept is then trusted, and nothing written is reused."""
    folder = root()
    key = str(folder)
    if key not in _secrets:
        value = None
        if folder_problem(folder) is None:
            path = folder / _SECRET
            for _ in range(2):
                data = read_entry(path, _SECRET_SIZE, private=True)
                if data is not None and len(data) == _SECRET_SIZE:
                    value = data
                    break
                exists = os.path.lexists(path)
                if write_entry(path, secrets.token_bytes(_SECRET_SIZE), folder, link=not exists) or not exists:
                    continue  # made, or another run made it meanwhile: read what won
                break
        _secrets[key] = value if value is not None else secrets.token_bytes(_SECRET_SIZE)
    return _secrets[key]

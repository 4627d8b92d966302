"""A file a command writes on the user's behalf (``simulate --write FORMAT:FILE``): named before
the work starts and written after it, so both steps refuse what the user cannot have meant.

- An existing file is kept unless ``force``; a folder, FIFO, device or socket never is the target
  (a FIFO with no reader would block for ever, ``/dev/full`` fails after minutes of work).
- A symbolic link is never followed and never replaced: it may point anywhere (``/etc/passwd``).
- The text goes to a temporary file beside the target, which is then renamed into place: a
  reader sees no file or the whole of it, and a failed write leaves what was there.

Every refusal is an InputError naming the file (exit 2)."""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from colocate.errors import InputError


def check(file: Path, force: bool, option: str = "--write") -> None:
    """Refuse a target the command must not write: a missing folder, a link, anything but a
    regular file, or an existing file without ``force``."""
    name = str(file)
    try:
        if not file.absolute().parent.is_dir():
            raise InputError(option, name, "must be a file in an existing folder")
        st = os.lstat(file)
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, a folder we may not read
        raise InputError(option, name, f"cannot be written: {_reason(exc)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError(option, name, "is a symbolic link; colocate does not follow one: name the file itself")
    if stat.S_ISDIR(st.st_mode):
        raise InputError(option, name, "is a folder; name a file in it")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(option, name, "is not a regular file (a FIFO, device or socket); name a file")
    if not force:
        raise InputError(option, name, "exists; add --force to replace it, or name a new file")


def write(file: Path, text: str, force: bool, option: str = "--write") -> None:
    """``text`` as UTF-8 in ``file``, through a temporary file in the same folder renamed into
    place. Checks again first: the work between naming and writing may have taken minutes."""
    check(file, force, option)
    tmp = None
    try:
        # mkstemp: O_CREAT | O_EXCL, a fresh name no link can stand at; mode 0600 widened to what
        # the umask gives an ordinary file.
        fd, tmp = tempfile.mkstemp(dir=file.absolute().parent, prefix=f".{file.name[:64]}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o666 & ~_umask())
            out.write(text.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        _place(Path(tmp), file, force, option)
        tmp = None
    except OSError as exc:
        raise InputError(option, str(file), f"cannot be written: {_reason(exc)}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _place(tmp: Path, file: Path, force: bool, option: str) -> None:
    """Rename ``tmp`` to ``file``. Without ``force`` a hard link, which fails when ``file`` exists
    (a file that appeared meanwhile is kept); rename(2) replaces a link itself, never its target."""
    if force:
        os.replace(tmp, file)
        return
    try:
        os.link(tmp, file, follow_symlinks=False)
    except OSError as exc:
        if exc.errno == errno.EEXIST:
            raise InputError(option, str(file), "appeared while colocate ran; it is kept (add --force to "
                             "replace it)") from None
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        check(file, False, option)  # a file system without hard links: rename, after one more look
        os.replace(tmp, file)
        return
    os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)

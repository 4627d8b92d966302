"""The files ``colocate init`` writes, and writing them without overwriting or half-writing anything.

The templates are package data (colocate/base/data/init/): ``common/`` for every example, and per
example its colocate.yaml; the reference example's is the packaged reference configuration itself."""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path, PurePosixPath

from colocate.errors import InputError

EXAMPLES = ("reference", "minimal")
TEMPLATE_SUFFIX = ".template"


def files(example: str) -> dict[str, Path]:
    """The new repository's files, by their path in it (POSIX), each with the template it is copied from."""
    from colocate import config as config_mod
    from colocate.base.data_files import CONFIG_NAME, data_path

    common = data_path("colocate.base", "data", "init", "common")
    # A template of Python code is named *.template: in the package it is data, not a module of
    # colocate.base that imports colocate.cli from below it.
    out = {p.relative_to(common).as_posix().removesuffix(TEMPLATE_SUFFIX): p for p in sorted(common.rglob("*"))
           if p.is_file() and "__pycache__" not in p.parts}
    out[CONFIG_NAME] = (config_mod.reference_path() if example == "reference"
                        else data_path("colocate.base", "data", "init", example, CONFIG_NAME))
    return dict(sorted(out.items()))


def select(available: dict[str, Path], adds: list[str]) -> dict[str, Path]:
    """The files ``--add`` names: a file of the scaffold, or a folder of it (every file below)."""
    chosen: dict[str, Path] = {}
    for add in adds:
        name = PurePosixPath(add.replace(os.sep, "/")).as_posix().strip("/")
        hits = {rel: src for rel, src in available.items() if rel == name or rel.startswith(name + "/")}
        if not hits or name in ("", "."):
            raise InputError(add, "", "is not a file or folder `colocate init` writes; --add takes one of: "
                             + ", ".join(choices(available)))
        chosen.update(hits)
    return dict(sorted(chosen.items()))


def choices(available: dict[str, Path]) -> list[str]:
    """What --add accepts, for messages: the top-level files and folders (with a slash) of the scaffold."""
    return sorted({rel.split("/")[0] + ("/" if "/" in rel else "") for rel in available})


def refuse_existing(folder: Path, chosen: dict[str, Path]) -> None:
    """init never overwrites: an existing file (or link, or a file where a folder must go) is refused,
    all of them named at once, before anything is written."""
    taken = []
    for rel in chosen:
        path = folder / rel
        if path.exists() or path.is_symlink():
            taken.append(str(path))
        taken += [str(folder / p) for p in _parents(rel) if (folder / p).exists() and not (folder / p).is_dir()]
    if taken:
        raise InputError(", ".join(sorted(set(taken))), "", "already exists; init never overwrites a file: "
                         "move it away, or leave it out of --add")


def refuse_unwritable(folder: Path, chosen: dict[str, Path]) -> None:
    """Each existing folder a new file or folder goes into must be writable, checked before anything
    is written so a refusal touches nothing (a missing target is made in its parent)."""
    for rel in chosen:
        place = folder / rel
        while not place.parent.exists() and place.parent != place:
            place = place.parent
        where = place.parent
        if not os.access(where, os.W_OK | os.X_OK):
            raise InputError(str(where), "", "is not writable: nothing was written; run init where you can "
                             "write, or make the folder writable")


def write(folder: Path, chosen: dict[str, Path]) -> list[Path]:
    """Copy the chosen templates into ``folder`` (made if missing), each file created exclusively.
    On a failure midway (a full disk, a folder changed meanwhile) what was written is removed again."""
    made: list[Path] = []
    written: list[Path] = []
    try:
        for rel, source in chosen.items():
            for here in [folder, *(folder / p for p in _parents(rel))]:
                if not here.is_dir():
                    here.mkdir()
                    made.append(here)
            target = folder / rel
            with open(target, "xb") as out:
                written.append(target)  # before the template is read: a failure there removes it too
                with open(source, "rb") as src:
                    shutil.copyfileobj(src, out)
    except OSError as exc:
        for path in reversed(written):
            path.unlink(missing_ok=True)
        for path in reversed(made):  # innermost first; each holds only what was removed above
            with contextlib.suppress(OSError):
                path.rmdir()
        raise InputError(str(exc.filename or folder), "", f"cannot be written ({exc.strerror or exc}); "
                         "nothing was written") from None
    return written


def _parents(rel: str) -> list[str]:
    """The folders a scaffold path goes through, outermost first: ``.github/workflows/x`` ->
    ``.github``, ``.github/workflows``."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:i + 1]) for i in range(len(parts))]

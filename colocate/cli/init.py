"""``colocate init``: a starter colocate.yaml, never over an existing one or inside a tree synth owns."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colocate.base.text import escape
from colocate.cli.common import EXIT_OK
from colocate.errors import InputError


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("init", help="write a starter colocate.yaml (the reference configuration) to edit")
    p.add_argument("folder", nargs="?", default=".", help="where (default: here); an existing colocate.yaml is kept")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colocate import config as config_mod
    from colocate.base.data_files import CONFIG_NAME

    folder = Path(args.folder)
    target = folder / CONFIG_NAME
    if not folder.is_dir():
        raise InputError(args.folder, "", "no such folder")
    if target.exists() or target.is_symlink():
        raise InputError(str(target), "", "colocate.yaml already exists; init never overwrites it")
    shadowed = _init_place(folder)
    try:
        with open(target, "x") as out:
            out.write(config_mod.reference_path().read_text())
    except OSError as exc:
        raise InputError(str(target), "", f"cannot be written: {exc.strerror}") from None
    if shadowed:
        print(escape(f"colocate: warning: {folder} is inside the colocate repository {shadowed.parent}: every "
                     f"command run in {folder} or below now uses {target}, not {shadowed}"), file=sys.stderr)
    print(escape(f"colocate: wrote {target}: the reference cluster (its cluster: section) and its settings; edit them, add job files to jobs/, "
                 "then run `colocate synth`"), file=sys.stderr)
    return EXIT_OK

def _init_place(folder: Path) -> Path | None:
    """Refuse a folder synth owns (a repository's jobs/ or dist/, or any dist/ tree), where a
    colocate.yaml would break synth; else the colocate.yaml the new one would shadow, if any."""
    from colocate.base.data_files import CONFIG_NAME, find_repository

    here = folder.resolve()
    outer = find_repository(here.parent)
    if outer is not None:
        if here.is_relative_to(outer / "jobs"):
            raise InputError(str(folder), "", f"is the job files' folder of the colocate repository {outer} (or "
                             "below it): synth would read colocate.yaml as a job file; run init in a folder of its own")
        if here.is_relative_to(outer / "dist"):
            raise InputError(str(folder), "", f"is inside the dist/ that synth writes for the colocate repository "
                             f"{outer}: synth would refuse the foreign file; run init in a folder of its own")
    if (here / "index.yaml").is_file() and _is_dist_index(here / "index.yaml"):
        raise InputError(str(folder), "", "holds a dist/ tree (index.yaml), which synth writes whole: run init in "
                         "the folder above it, or in a new one")
    return outer / CONFIG_NAME if outer is not None else None

def _is_dist_index(path: Path) -> bool:
    """Whether the file starts as the DistIndex synth writes (read no further: it may be large or odd)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b"kind: DistIndex" in head

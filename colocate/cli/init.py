"""``colocate init``: a new colocate repository (colocate.yaml, an example job, main.py and cdk8s.yaml,
the pre-commit hooks, the GitHub workflow), never over an existing file or inside a tree synth owns."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from colocate.base.text import escape
from colocate.cli import scaffold
from colocate.cli.common import EXIT_OK
from colocate.errors import InputError

#: What a folder may hold and still count as empty: `git init` comes before `colocate init`.
_IGNORED = {".git"}


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("init", help="start a colocate repository: colocate.yaml, an example job, main.py, cdk8s.yaml, "
                "the pre-commit hooks and the GitHub workflow", description="Write a new colocate repository "
                "into FOLDER, which must be empty (a .git folder aside) or missing. In a folder that is not "
                "empty, name the files to add with --add; init never overwrites a file.")
    p.add_argument("folder", nargs="?", default=".", help="where (default: here); made when missing")
    p.add_argument("--example", choices=scaffold.EXAMPLES, default="reference",
                   help="the cluster to start from: reference (the reference cluster, every key explained; "
                        "default) or minimal (one online pool, one mixed GPU pool, one online service)")
    p.add_argument("--add", action="append", default=[], metavar="PATH",
                   help="write only this file or folder of the new repository (colocate.yaml, jobs/, main.py, "
                        "cdk8s.yaml, README.md, .gitignore, .pre-commit-config.yaml, .github/), into a folder "
                        "that need not be empty; repeat for more")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    available = scaffold.files(args.example)
    # --add is read first: a misspelt name is the mistake to report, whatever the folder holds.
    chosen = scaffold.select(available, args.add) if args.add else available
    _refuse_target(folder)
    shadowed = _init_place(folder)
    _refuse_unasked(folder, args.add, available)
    scaffold.refuse_existing(folder, chosen)
    scaffold.refuse_unwritable(folder, chosen)
    written = scaffold.write(folder, chosen)
    for path in written:
        print(escape(str(path)))
    if shadowed:
        print(escape(f"colocate: warning: {folder} is inside the colocate repository {shadowed.parent}: every "
                     f"command run in {folder} or below now uses {folder / 'colocate.yaml'}, not {shadowed}"),
              file=sys.stderr)
    enter = "" if folder == Path(".") else f"cd {shlex.quote(str(folder))} && "
    print(escape(f"colocate: wrote {len(written)} files ({args.example} example); edit colocate.yaml's cluster: "
                 f"section and jobs/, then run `{enter}colocate synth && colocate check`"), file=sys.stderr)
    return EXIT_OK


def _refuse_target(folder: Path) -> None:
    """A file is no folder; a missing folder needs a parent to be made in."""
    if folder.exists() and not folder.is_dir():
        raise InputError(str(folder), "", "is a file, not a folder: name the folder to write the new repository into")
    if not folder.exists() and (folder.is_symlink() or not folder.absolute().parent.is_dir()):
        raise InputError(str(folder), "", "no such folder, and no folder to make it in")


def _refuse_unasked(folder: Path, adds: list[str], available: dict[str, Path]) -> None:
    """A folder with files in it takes only what --add names: init never mixes its files into
    someone else's unasked."""
    if not folder.is_dir():
        return
    try:
        entries = sorted(p.name for p in folder.iterdir() if p.name not in _IGNORED)
    except OSError as exc:
        raise InputError(str(folder), "", f"cannot be read ({exc.strerror})") from None
    if entries and not adds:
        shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
        raise InputError(str(folder), "", f"is not empty ({shown}): init writes a new repository into an empty "
                         "folder; to add some of its files here, name them with --add (one of: "
                         f"{', '.join(scaffold.choices(available))})")


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

"""``colocate synth``: build the charts and write dist/ (or say it is stale)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from colocate.base.text import escape
from colocate.cli.common import EXIT_FINDINGS, EXIT_OK, Interrupted
from colocate.errors import ColocateError


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("synth", help="synthesize the cluster into dist/")
    p.add_argument("--outdir", help="output folder (default: the repository's dist/)")
    p.add_argument("--jobs", help="folder of job request files (default: the repository's jobs/; "
                                  "none there, or an empty folder, is no job)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 and list the files when the output folder is stale")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config, outdir, jobs = _synth_paths(args)
    try:
        from colocate import app  # starts Node (jsii): a Ctrl-C may come here already
    except KeyboardInterrupt:
        _quiet_children()
        raise Interrupted(f"{outdir} is unchanged (the tree it held before, if any)") from None
    if args.check:
        diff = app.stale(outdir, config, jobs, jobs_required=bool(args.jobs))
        if not diff:
            print(escape(f"colocate: {outdir} is up to date"), file=sys.stderr)
            return EXIT_OK
        for label, paths in (("added", diff.added), ("removed", diff.removed), ("modified", diff.modified)):
            for path in paths:
                print(escape(f"{label:8} {outdir / path}"))
        count = len(diff.added) + len(diff.removed) + len(diff.modified)
        print(escape(f"colocate: {outdir} is stale ({count} files would change): run `{_synth_command(args)}` "
                     f"and commit the result"), file=sys.stderr)
        return EXIT_FINDINGS
    swapped: list[bool] = []
    try:
        files = app.synth(outdir, config, jobs, jobs_required=bool(args.jobs), on_swap=lambda: swapped.append(True))
        # The new tree is in place: the command has done its work, and a Ctrl-C now changes nothing.
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
    except KeyboardInterrupt:
        _quiet_children()
        raise Interrupted(f"{outdir} holds the new tree (the signal came after it was swapped in)" if swapped else
                          f"{outdir} is unchanged (the tree it held before, if any)") from None
    print(escape(f"colocate: wrote {len(files)} files to {outdir}"), file=sys.stderr)
    return EXIT_OK

def _quiet_children() -> None:
    """After Ctrl-C, Node (jsii's runtime, in the same process group) dies too, and jsii's thread
    copies its stack lines to sys.stderr: send them nowhere. colocate's own last line goes to
    sys.__stderr__."""
    sys.stderr = open(os.devnull, "w")

def _synth_paths(args: argparse.Namespace) -> tuple[Path | None, Path, Path]:
    """(--config, output folder, jobs folder): the options given, else those of the repository
    (the nearest folder up with a colocate.yaml), else those next to --config. With neither,
    synth refuses: it would write the tool's own checkout."""
    from colocate.base.data_files import find_repository

    config = Path(args.config) if args.config else None
    home = find_repository()
    if home is None:
        if config is None:
            raise ColocateError(f"no colocate.yaml in {Path.cwd()} or any folder above it: synth writes the "
                                "dist/ of a colocate repository from its colocate.yaml and jobs/; run it inside "
                                "one, name a configuration with --config, or start one with `colocate init`")
        home = config.resolve().parent
    outdir = Path(args.outdir) if args.outdir else home / "dist"
    jobs = Path(args.jobs) if args.jobs else home / "jobs"
    return config, outdir, jobs

def _synth_command(args: argparse.Namespace) -> str:
    """The ``colocate synth`` that refreshes what ``--check`` compared, with its non-default options."""
    words = ["colocate"] + (["--config", args.config] if args.config else []) + ["synth"]
    for option in ("outdir", "jobs"):
        value = getattr(args, option)
        if value:
            words += [f"--{option}", value]
    return " ".join(words)

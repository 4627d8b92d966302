"""What every command shares: exit codes, the interruption it reports, where dist/ is."""
from __future__ import annotations

import sys
from pathlib import Path

from colocate.base.text import escape

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 3, 130, 141


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM, with what the interrupted command leaves in place."""


def root() -> Path:
    from colocate.base.data_files import repository

    return repository()


def default_dist() -> Path:
    """dist/ of the working directory, else the repository's (say which, run from a subfolder)."""
    here = Path("dist")
    if here.is_dir():
        return here
    ours = root() / "dist"
    print(escape(f"colocate: no dist/ here; checking {ours}"), file=sys.stderr)
    return ours

"""``colocate diff``: what a change to dist/ does, per Argo CD Application."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colocate.cli.common import EXIT_OK


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("diff", help="what a change to dist/ does to the cluster, per Argo CD Application",
                       description="Compare dist/ at two git revisions: objects added, removed and changed, "
                                   "dangerous changes first, and the policy findings introduced and resolved.")
    p.add_argument("base", nargs="?", help="git revision (default: the merge-base of HEAD with main)")
    p.add_argument("head", nargs="?", help="git revision (default: the working tree)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--dist", default="dist", help="folder of the synth output in the repository (default: dist)")
    p.add_argument("--no-policy", action="store_true", help="skip running colocate check on both trees")
    p.add_argument("--no-capacity", action="store_true",
                   help="skip the requests per pool and tier, the quota use and the training queue")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colocate.review import usage, diff, formats

    config = Path(args.config) if args.config else None
    pools = None if args.no_capacity else (lambda: usage.reference_pools(config))
    result = diff.review(Path.cwd(), args.base, args.head, dist=args.dist, config_path=config,
                         with_policy=not args.no_policy, pools=pools)
    sys.stdout.write(formats.FORMATS[args.format](result))
    return EXIT_OK

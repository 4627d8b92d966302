"""colocate command line: ``synth`` writes dist/, ``check`` proves manifests safe."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colocate.errors import ColocateError, InputError

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT = 0, 1, 2


def _synth(args: argparse.Namespace) -> int:
    from colocate import app

    config = Path(args.config) if args.config else None
    if args.check:
        diff = app.stale(Path(args.outdir), config, Path(args.jobs))
        if not diff:
            print(f"colocate: {args.outdir} is up to date", file=sys.stderr)
            return EXIT_OK
        for label, paths in (("added", diff.added), ("removed", diff.removed), ("modified", diff.modified)):
            for path in paths:
                print(f"{label:8} {Path(args.outdir) / path}")
        count = len(diff.added) + len(diff.removed) + len(diff.modified)
        print(f"colocate: {args.outdir} is stale ({count} files would change): run `{_synth_command(args)}` "
              f"and commit the result", file=sys.stderr)
        return EXIT_FINDINGS
    files = app.synth(Path(args.outdir), config, Path(args.jobs))
    print(f"colocate: wrote {len(files)} files to {args.outdir}", file=sys.stderr)
    return EXIT_OK


def _synth_command(args: argparse.Namespace) -> str:
    """The ``colocate synth`` that refreshes what ``--check`` compared, with its non-default options."""
    words = ["colocate"] + (["--config", args.config] if args.config else []) + ["synth"]
    for option, default in (("outdir", _root() / "dist"), ("jobs", _root() / "jobs")):
        value = getattr(args, option)
        if Path(value).resolve() != default:
            words += [f"--{option}", value]
    return " ".join(words)


def _check(args: argparse.Namespace) -> int:
    from colocate import checker, report

    result = checker.check([Path(p) for p in args.paths or ["dist"]],
                           Path(args.config) if args.config else None)
    out = report.to_json(result) if args.format == "json" else report.to_text(result)
    sys.stdout.write(out)
    return EXIT_FINDINGS if result.errors else EXIT_OK


def _diff(args: argparse.Namespace) -> int:
    from colocate.review import capacity, diff, formats

    config = Path(args.config) if args.config else None
    pools = None if args.no_capacity else (lambda: capacity.reference_pools(config))
    result = diff.review(Path.cwd(), args.base, args.head, dist=args.dist, config_path=config,
                         with_policy=not args.no_policy, pools=pools)
    sys.stdout.write(formats.FORMATS[args.format](result))
    return EXIT_OK


def _capacity(args: argparse.Namespace) -> int:
    from colocate.review import capacity, formats, quota

    if not Path(args.path).is_dir():
        raise InputError(args.path, "", "no such folder: name a dist/ folder")
    docs = capacity.api_objects(Path(args.path))
    pools = capacity.reference_pools(Path(args.config) if args.config else None)
    sys.stdout.write(formats.CAPACITY_FORMATS[args.format](capacity.usage(docs, pools), quota.uses(docs, pools)))
    return EXIT_OK


def _rules(args: argparse.Namespace) -> int:
    from colocate import checker

    for rule in checker.load_rules():
        print(f"{rule.id:7} {rule.severity:8} {rule.name:40} {rule.rationale}")
    return EXIT_OK


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="colocate", description=__doc__)
    p.add_argument("--config", help="colocate.yaml to use (default: the repository's)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("synth", help="synthesize the cluster into dist/")
    s.add_argument("--outdir", default=str(_root() / "dist"), help="output folder (default: dist/)")
    s.add_argument("--jobs", default=str(_root() / "jobs"), help="folder of job request files (default: jobs/)")
    s.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 and list the files when the output folder is stale")
    s.set_defaults(func=_synth)
    c = sub.add_parser("check", help="validate manifests with kubeconform and the policy rules")
    c.add_argument("paths", nargs="*", help="files or folders (default: dist/)")
    c.add_argument("--format", choices=("text", "json"), default="text")
    c.set_defaults(func=_check)
    d = sub.add_parser("diff", help="what a change to dist/ does to the cluster, per Argo CD Application",
                       description="Compare dist/ at two git revisions: objects added, removed and changed, "
                                   "dangerous changes first, and the policy findings introduced and resolved.")
    d.add_argument("base", nargs="?", help="git revision (default: the merge-base of HEAD with main)")
    d.add_argument("head", nargs="?", help="git revision (default: the working tree)")
    d.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    d.add_argument("--dist", default="dist", help="folder of the synth output in the repository (default: dist)")
    d.add_argument("--no-policy", action="store_true", help="skip running colocate check on both trees")
    d.add_argument("--no-capacity", action="store_true", help="skip the requests per pool and tier")
    d.set_defaults(func=_diff)
    k = sub.add_parser("capacity", help="requests per pool and tier against allocatable, and quota use")
    k.add_argument("path", nargs="?", default=str(_root() / "dist"), help="dist/ folder (default: the repository's dist/)")
    k.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    k.set_defaults(func=_capacity)
    r = sub.add_parser("rules", help="list every policy rule")
    r.set_defaults(func=_rules)
    return p


def _root() -> Path:
    from colocate.resources import repository

    return repository()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ColocateError as exc:
        print(f"colocate: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())

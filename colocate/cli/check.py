"""``colocate check``: kubeconform and the policy rules over files, folders or standard input."""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

from colocate.base.text import escape
from colocate.cli.common import EXIT_FINDINGS, EXIT_OK, default_dist
from colocate.cli.rules import explain
from colocate.errors import InputError


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("check", help="validate manifests with kubeconform and the policy rules",
                description="Validate YAML and JSON manifests (files or folders; List items one by one) "
                            "with kubeconform and the policy rules. Folders of Helm charts and Kustomize "
                            "are reported, not checked: render them first.",
                epilog=CHECK_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", help="files or folders, - for standard input (default: dist/ here, else the "
                                            "repository's)")
    p.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                   help="text (grouped by file; colour on a terminal unless NO_COLOR), json, or SARIF 2.1.0")
    p.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="lowest severity that makes the exit code 1 (default: error)")
    p.add_argument("--explain", metavar="RULE-ID", help="print a rule's rationale, fix and examples, and exit")
    p.add_argument("--cluster", help="file or folder of NodePool descriptions the capacity rules judge against "
                                     "(it wins over those among the checked files; default: those, else the repository's dist/nodes/)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="in checked folders, leave out paths (relative to the folder) or names matching GLOB "
                        "(repeat for more); hidden folders are left out unless named")
    p.add_argument("--timings", action="store_true",
                   help="print the seconds each phase and rule took to stderr, slowest first, and what the cache did")
    caching = p.add_mutually_exclusive_group()
    caching.add_argument("--cache", metavar="DIR",
                   help="folder of the verdict cache, new, empty or holding a CACHEDIR.TAG (default: check/ of "
                        "$COLOCATE_CACHE_DIR, else $XDG_CACHE_HOME/colocate, else ~/.cache/colocate; "
                        "docs/check-cache.md)")
    caching.add_argument("--no-cache", action="store_true",
                   help="check everything afresh; read and write no cache")
    p.set_defaults(func=run)


CHECK_EXIT_CODES = """exit codes:
  0    no finding at or above --fail-on (default error; warnings may be listed)
  1    at least one finding at or above --fail-on, and nothing else
  2    unusable input: a file that is not YAML, JSON or UTF-8 text, an unknown path, a broken
       config, kubeconform missing or failing to start; the message names the file (and line)
  3    internal error in colocate: one line; rerun with --debug for the trace
  130  interrupted (Ctrl-C)
  141  the reader of the output went away (e.g. | head), as a shell reports SIGPIPE"""

def run(args: argparse.Namespace) -> int:
    from colocate import checker
    from colocate.checker import formats as check_formats

    if args.explain:
        return explain(args.explain, Path(args.config) if args.config else None)
    paths = [Path(p) for p in args.paths] if args.paths else [default_dist()]
    timings: checker.Timings | None = [] if args.timings else None
    cache = _cache_folder(args)
    with _stdin_as_file(paths) as (paths, stdin_file):
        try:
            result = checker.check(paths, Path(args.config) if args.config else _outside_config(),
                                   Path(args.cluster) if args.cluster else None, timings, args.exclude,
                                   cache if stdin_file is None else None)
        except InputError as exc:
            if stdin_file is not None and exc.file == str(stdin_file):
                raise InputError("-", exc.where, exc.reason) from None
            raise
        if stdin_file is not None:  # findings name "-", as the user did
            result = _renamed(result, str(stdin_file), "-")
    if timings is not None:
        for name, seconds in sorted(timings, key=lambda t: -t[1]):
            print(f"{seconds:8.3f} s  {name}", file=sys.stderr)
        print(escape(f"cache: {result.cache or 'not used (--no-cache, or standard input)'}"), file=sys.stderr)
    if args.format == "text":
        sys.stdout.write(check_formats.to_text(result, colour=check_formats.use_colour(sys.stdout)))
    else:
        sys.stdout.write(check_formats.FORMATS[args.format](result))
    failing = result.findings if args.fail_on == "warning" else result.errors
    return EXIT_FINDINGS if failing else EXIT_OK

def _cache_folder(args: argparse.Namespace) -> Path | None:
    """The verdict cache's folder (--cache, else the user's cache folder); None with --no-cache.
    A --cache that cannot be one is bad input, said before anything is read or written."""
    from colocate.checker import verdict_cache

    if args.no_cache:
        return None
    if args.cache is None:
        return verdict_cache.default_dir()
    folder = Path(args.cache)
    problem = verdict_cache.usable_dir(folder)
    if problem:
        raise InputError(args.cache, "", f"--cache cannot be the verdict cache's folder: {problem}")
    return folder

@contextlib.contextmanager
def _stdin_as_file(paths: list[Path]):
    """``-`` among the paths: standard input, saved to a temporary file kubeconform can read."""
    if Path("-") not in paths:
        yield paths, None
        return
    with tempfile.TemporaryDirectory(prefix="colocate-stdin-") as tmp:
        file = Path(tmp) / "stdin.yaml"
        file.write_bytes(sys.stdin.buffer.read())
        yield [file if p == Path("-") else p for p in paths], file

def _renamed(result, old: str, new: str):
    from dataclasses import replace

    def rename(f):
        return replace(f, file=new) if f.file == old else f

    return replace(result, findings=[rename(f) for f in result.findings],
                   suppressed=[(rename(f), why) for f, why in result.suppressed])

def _outside_config() -> Path | None:
    """Outside any colocate repository (no colocate.yaml from here up), the packaged reference
    configuration, said in one line; None inside one (its colocate.yaml)."""
    from colocate.base.data_files import find_repository

    if find_repository() is not None:
        return None
    from colocate import config as config_mod  # not before: a check answered from its cache needs none of it

    path = config_mod.reference_path()
    print(f"colocate: no colocate.yaml in {Path.cwd()} or above; using the packaged reference configuration "
          f"({path}); `colocate init` writes one to edit", file=sys.stderr)
    return path

"""colocate command line: ``synth`` writes dist/, ``check`` proves manifests safe."""
from __future__ import annotations

import argparse
import os
import sys
import traceback

from colocate.base.text import escape
from colocate.cli import capacity, check, diff, init, offline, report, resubmitter, rules, simulate, synth
from colocate.cli.common import EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_PIPE, Interrupted
from colocate.errors import ColocateError

__all__ = ["main", "parser"]

#: In the order `colocate --help` lists them.
COMMANDS = (synth, check, diff, capacity, report, offline, resubmitter, simulate, init, rules)


def parser() -> argparse.ArgumentParser:
    from colocate import __version__

    p = argparse.ArgumentParser(prog="colocate", description=__doc__)
    p.add_argument("--version", action="version", version=f"colocate {__version__}")
    p.add_argument("--config", help="colocate.yaml to use (default: the repository's)")
    p.add_argument("--debug", action="store_true", help="on an internal error, print the Python trace")
    # Global options are also accepted after the command; SUPPRESS keeps the subcommand from
    # resetting what was given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", default=argparse.SUPPRESS, help="colocate.yaml to use (default: the repository's)")
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="on an internal error, print the Python trace")
    sub = p.add_subparsers(dest="command", required=True)

    def command(name: str, **kwargs) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kwargs)

    for module in COMMANDS:
        module.add(command)
    return p


def main(argv: list[str] | None = None) -> int:
    """Exit 0 (clean), 1 (findings), 2 (bad input), 3 (our bug), 130 (interrupted)."""
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except ColocateError as exc:
        # Messages quote file names and values: each line escaped (a message's own lines kept).
        print("colocate: error: " + "\n".join(map(escape, str(exc).split("\n"))), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:
        said = f": {exc}" if isinstance(exc, Interrupted) else ""
        print(f"colocate: interrupted{said}", file=sys.__stderr__ or sys.stderr)
        # Objects torn down at exit (jsii's Node process among them) may fail noisily after a
        # signal; the line above already says what happened.
        sys.unraisablehook = lambda unraisable: None
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Nobody reads stdout any more; point it at /dev/null so the exit flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        said = escape(" ".join(str(exc).split()))
        print(f"colocate: internal error: {type(exc).__name__}{': ' + said if said else ''} "
              f"(a bug in colocate; {'the trace is above' if args.debug else 'rerun with --debug for the trace'})",
              file=sys.stderr)
        return EXIT_INTERNAL


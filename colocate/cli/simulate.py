"""``colocate simulate``: dist/ in the real Kubernetes components, a scenario played, a report."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from colocate.base.text import escape
from colocate.cli.common import EXIT_FINDINGS, EXIT_OK, default_dist
from colocate.errors import ColocateError, InputError


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("simulate", help="sync dist/ into the real Kubernetes components on loopback and report placement",
                description="Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the "
                            "training-operator and kwok (the kubelets of nodes shaped like dist/nodes/) on "
                            "127.0.0.1, apply dist/, play a scenario and report what the cluster did: objects "
                            "rejected, pods not created, pods Pending with the scheduler's reason, placement "
                            "per node, preemptions, TFJob states. The first run builds the components (minutes).",
                epilog="exit codes:\n  0    every pod placed (a scenario may let offline pods wait)\n"
                       "  1    something rejected, not created, Pending, or a TFJob failed\n"
                       "  2    unusable input, or a component could not be built or started\n"
                       "  130  interrupted (every process the simulation started is stopped)",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", help="dist/ folder (default: dist/ here, else the repository's)")
    p.add_argument("--scenario", default="night", help=f"a shipped scenario ({_shipped_scenarios()}; default "
                   "night), or a scenario file")
    p.add_argument("--no-resubmitter", action="store_true", help="do not run colocate resubmitter: see what "
                   "training-operator v1.7.0 alone does to preempted TFJobs")
    p.add_argument("--format", choices=("text", "json", "markdown", "html"), default="text",
                   help="html: a self-contained page with the day's charts")
    p.add_argument("--write", action="append", default=[], metavar="FORMAT:FILE",
                   help="also write the report in FORMAT to FILE (repeatable): one run gives, say, the "
                        "Markdown of a pull-request comment on stdout and --write html:day.html")
    p.add_argument("--force", action="store_true", help="let --write replace a regular file that exists (never a "
                   "link, folder, FIFO or device)")
    p.add_argument("--base", default="none", metavar="REV",
                   help="sync dist/ at git revision REV first, let it settle, then sync the working tree's dist/ onto "
                        "it as Argo CD syncs a merged pull request, and report what that sync did (an immutable field, "
                        "a failed apply: exit 1); none (default): sync dist/ from nothing")
    p.add_argument("--fresh", action="store_true",
                   help="sync the base from nothing and keep nothing. By default the settled base (dist/, or REV's "
                        "with --base) is restored from the user's cache folder when a run kept it there, else synced "
                        "and kept: a second run on the same base starts in seconds (docs/simulate.md, \"A kept "
                        "base\")")
    p.add_argument("--keep-logs", action="store_true", help="keep the components' logs (kept anyway on failure)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colocate.simulate import scenario

    dist = Path(args.path) if args.path else default_dist()
    chosen = scenario.load(args.scenario)
    if args.base != "none":
        with tempfile.TemporaryDirectory(prefix="colocate-base-") as tmp:
            return _run(args, _base_dist(dist, args.base, Path(tmp)), chosen, change=dist)
    return _run(args, dist, chosen)


def _run(args: argparse.Namespace, dist: Path, chosen, change: Path | None = None) -> int:
    import signal
    from colocate.simulate import formats, run as simulation

    also = _report_files(args.write, formats.FORMATS, args.force)  # named before minutes of running
    # SIGTERM (CI cancelling a job) stops the simulation's processes as Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    obs, logs = simulation.simulate(dist, chosen, Path(args.config) if args.config else None, keep_logs=args.keep_logs,
                             log=lambda line: print(escape(line), file=sys.stderr, flush=True),
                             resubmitter=False if args.no_resubmitter else None,
                             render_jobs=lambda paths: _job_files(args.config, paths), change=change,
                             keep_base=not args.fresh)
    # The report on stdout first: a file that cannot be written loses neither it nor the run.
    sys.stdout.write(formats.FORMATS[args.format](obs, logs))
    sys.stdout.flush()
    write_reports(also, lambda fmt: formats.FORMATS[fmt](obs, logs), args.force)
    return EXIT_OK if obs.ok else EXIT_FINDINGS


def _base_dist(dist: Path, revision: str, into: Path) -> Path:
    """``dist`` as git revision ``revision`` holds it, copied under ``into`` (diff's extraction:
    review/tree.py)."""
    import shutil
    from colocate.review import tree

    if not dist.is_dir():
        raise InputError(str(dist), "", "no such folder: name a dist/ folder")
    try:
        repo = tree.toplevel(dist)
    except ColocateError:
        raise InputError("--base", revision, f"needs {dist} inside a git repository") from None
    relative = dist.resolve().relative_to(repo.resolve()).as_posix()
    commit = tree.resolve(repo, revision)
    with tree.checkout(repo, commit, relative) as base:
        if not base.is_dir():
            raise InputError("--base", revision, f"holds no {relative}/")
        shutil.copytree(base, into / "dist")
    return into / "dist"


def _job_files(config: str | None, paths):
    """The dist/ files of the job files a scenario adds (synth's own rendering)."""
    from colocate import app  # starts Node (jsii): only when a scenario adds a job
    return app.job_files(Path(config) if config else None, paths)

def _report_files(specs: list[str], known, force: bool) -> list[tuple[str, Path]]:
    """``FORMAT:FILE`` of each ``--write``, checked: a known format, a file named once, in an
    existing folder, not there yet unless ``force``, never a link or anything but a regular file."""
    from colocate.base import output_file

    out: list[tuple[str, Path]] = []
    for spec in specs:
        fmt, sep, name = spec.partition(":")
        if not sep or fmt not in known or not name:
            raise InputError("--write", spec, f"expected FORMAT:FILE with FORMAT one of {', '.join(known)}, "
                                              "e.g. --write html:day.html")
        file = Path(name)
        if any(os.path.abspath(file) == os.path.abspath(f) for _, f in out):
            raise InputError("--write", name, "is named twice; give each format its own file")
        output_file.check(file, force)
        out.append((fmt, file))
    return out

def write_reports(files: list[tuple[str, Path]], render, force: bool) -> None:
    """Write each ``(format, file)`` with ``render(format)``; every file is tried, and a failure
    is bad input naming each file that was not written (the others are in place)."""
    from colocate.base import output_file

    failed = []
    for fmt, file in files:
        try:
            output_file.write(file, render(fmt), force)
        except InputError as exc:
            failed.append(str(exc))
    if failed:
        raise ColocateError("the report is on stdout, but " + ("; ".join(failed)))

def _shipped_scenarios() -> str:
    """The names colocate/simulate/scenario.py ``shipped()`` gives, read here without importing the
    simulation at every start (the folder sits at the same place in a wheel)."""
    return ", ".join(sorted(p.stem for p in (Path(__file__).parent.parent / "simulate" / "scenarios").glob("*.yaml")))

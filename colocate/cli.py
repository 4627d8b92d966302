"""colocate command line: ``synth`` writes dist/, ``check`` proves manifests safe."""
from __future__ import annotations

import argparse
import math
import contextlib
import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path

from colocate.base.text import escape
from colocate.errors import ColocateError, InputError

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 3, 130, 141
CHECK_EXIT_CODES = """exit codes:
  0    no finding at or above --fail-on (default error; warnings may be listed)
  1    at least one finding at or above --fail-on, and nothing else
  2    unusable input: a file that is not YAML, JSON or UTF-8 text, an unknown path, a broken
       config, kubeconform missing or failing to start; the message names the file (and line)
  3    internal error in colocate: one line; rerun with --debug for the trace
  130  interrupted (Ctrl-C)
  141  the reader of the output went away (e.g. | head), as a shell reports SIGPIPE"""


def _synth(args: argparse.Namespace) -> int:
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


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM, with what the interrupted command leaves in place."""


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


def _check(args: argparse.Namespace) -> int:
    from colocate import checker
    from colocate.checker import formats as check_formats

    if args.explain:
        return _explain(args.explain, Path(args.config) if args.config else None)
    paths = [Path(p) for p in args.paths] if args.paths else [_default_dist()]
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


def _init(args: argparse.Namespace) -> int:
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
    print(escape(f"colocate: wrote {target}: the reference cluster's settings; edit them, add job files to jobs/, "
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


def _default_dist() -> Path:
    """dist/ of the working directory, else the repository's (say which, run from a subfolder)."""
    here = Path("dist")
    if here.is_dir():
        return here
    ours = _root() / "dist"
    print(escape(f"colocate: no dist/ here; checking {ours}"), file=sys.stderr)
    return ours


def _explain(rule_id: str, config: Path | None) -> int:
    from colocate import checker

    rules = {r.id: r for r in (checker.SCHEMA_RULE, checker.INPUT_RULE, *checker.described_rules(config))}
    rule = rules.get(rule_id.upper())
    if rule is None:
        raise ColocateError(f"--explain {rule_id!r}: no such rule; `colocate rules` lists them")
    fixtures = sorted((_root() / "tests" / "policies" / "fixtures" / rule.id).glob("*.yaml"))
    print(f"{rule.id} {rule.name} ({rule.severity}, {rule.category})\n\n{rule.rationale}\n\n"
          f"Checks: {rule.message}\nFix: {rule.fix}")
    if rule.admission:
        from colocate.rules.admission import policy_name

        print(f"Admission: also enforced by the API server, ValidatingAdmissionPolicy "
              f"{policy_name(rule)}, when colocate.yaml sets admission.policies: true"
              + (f"; differs from check: {' '.join(rule.admission['differs'].split())}" if rule.admission.get("differs")
                 else "") + " (docs/admission.md)")
    print(f"Suppressible: {_suppressible(rule)}")
    if fixtures:
        print("Examples: " + ", ".join(str(p.relative_to(_root())) for p in fixtures))
    return EXIT_OK


def _suppressible(rule) -> str:
    if rule.suppressible:
        return 'yes, with a reason: colocate.io/ignore: "ID: reason" on the object (docs/commands.md)'
    return "no: it keeps one of the platform's promises, so a colocate.io/ignore entry silences nothing (COL010)"


def _diff(args: argparse.Namespace) -> int:
    from colocate.review import usage, diff, formats

    config = Path(args.config) if args.config else None
    pools = None if args.no_capacity else (lambda: usage.reference_pools(config))
    result = diff.review(Path.cwd(), args.base, args.head, dist=args.dist, config_path=config,
                         with_policy=not args.no_policy, pools=pools)
    sys.stdout.write(formats.FORMATS[args.format](result))
    return EXIT_OK


def _capacity(args: argparse.Namespace) -> int:
    from colocate.review import usage, formats, quantities, queue, quota

    if not Path(args.path).is_dir():
        raise InputError(args.path, "", "no such folder: name a dist/ folder")
    docs = usage.api_objects(Path(args.path))
    if not docs:
        raise InputError(args.path, "", "no Kubernetes objects found: name a dist/ folder")
    quantities.check(docs)
    config = Path(args.config) if args.config else None
    pools = usage.reference_pools(config)
    queues = queue.queues(docs, queue.night_hours(config))
    waiting = {j.name for q in queues for j in q.waiting}
    running = queue.admitted_only(docs, queues)
    usage, uses = usage.usage(running, pools, usage.reference_tiers(config)), quota.uses(running, pools)
    sys.stdout.write(formats.CAPACITY_FORMATS[args.format](usage, uses, queues))
    if waiting:
        print(escape(f"colocate: not counted: {len(waiting)} TFJob(s) waiting in the queue ({', '.join(sorted(waiting))}): "
                     "Kueue admits them as quota frees"), file=sys.stderr)
    helm = sorted(d.name for d in docs if d.kind == "Application" and _renders_helm(d.obj))
    if helm:
        print(escape(f"colocate: not counted: the pods of Applications Argo CD renders from Helm charts "
                     f"({', '.join(helm)}); capacity reads only the manifests in {args.path}"), file=sys.stderr)
    made = sorted(f"{d.kind} {d.namespace}/{d.name}" for d in docs if d.kind in OPERATOR_MADE)
    if made:
        print(escape(f"colocate: not counted: the pods an operator makes from {', '.join(made)} "
                     "(no pod template in the manifests)"), file=sys.stderr)
    return EXIT_FINDINGS if formats.over_committed(usage, uses) else EXIT_OK


#: Custom resources whose pods an operator creates (prometheus-operator: a StatefulSet each).
OPERATOR_MADE = frozenset({"Prometheus", "Alertmanager", "ThanosRuler", "PrometheusAgent"})


def _renders_helm(app: dict) -> bool:
    spec = app.get("spec") or {}
    sources = ([spec["source"]] if isinstance(spec.get("source"), dict) else []) + \
        [s for s in spec.get("sources") or [] if isinstance(s, dict)]
    return any(s.get("chart") or s.get("helm") for s in sources)


def _report(args: argparse.Namespace) -> int:
    from colocate import config as config_mod
    from colocate.report import formats as report_formats, headline
    from colocate.mixin.config import MixinConfig
    from colocate.model.cluster import reference
    from colocate.report.prometheus_api import Prometheus

    prom = Prometheus(args.prometheus)
    start, end = headline.window(args.until, args.since)
    night = headline.Night.parse(args.night, args.timezone)
    mixin = MixinConfig.from_cluster(reference(config_mod.load(Path(args.config)) if args.config else config_mod.load()))
    result = headline.build(prom, mixin, start=start, end=end, step=headline.duration(args.step, "--step"), night=night)
    sys.stdout.write(report_formats.FORMATS[args.format](result))
    return EXIT_OK


def _offline(args: argparse.Namespace) -> int:
    from colocate import config as config_mod
    from colocate.incluster import offline
    from colocate.model.cluster import reference

    config = config_mod.load(Path(args.config)) if args.config else config_mod.load()
    cluster = reference(config)
    if not args.namespace and not args.cluster_queue:
        if config.queue:
            args.cluster_queue = cluster.training_queue
        else:
            args.namespace = [cluster.training_namespace]
    if not args.cluster_queue and len(args.namespace) > 1:
        raise InputError("--namespace", ",".join(args.namespace), "suspends the TFJobs of one namespace: give one "
                         "(several only with --cluster-queue, where resume waits for paused pods)")
    from colocate.incluster.kube import ClusterQueues, TFJobs, api_client

    if args.cluster_queue:
        target, what = args.cluster_queue, "clusterqueue"
        api = api_client(args.kubeconfig)
        # With a queue, --namespace names where resume waits for the paused pods to be gone.
        changes = offline.hold(ClusterQueues(api), args.cluster_queue, args.action, args.dry_run, jobs=TFJobs(api),
                               namespaces=tuple(args.namespace or (cluster.training_namespace,)),
                               log=lambda line: print(f"colocate: {escape(line)}", file=sys.stderr))
    else:
        (namespace,) = args.namespace
        target, what = namespace, "tfjob"
        changes = offline.run(TFJobs(api_client(args.kubeconfig)), namespace, args.action, args.dry_run,
                              log=lambda line: print(f"colocate: {escape(line)}", file=sys.stderr))
    for change in changes:
        name = change.name if args.cluster_queue else f"{target}/{change.name}"
        print(escape(f"{'would ' if args.dry_run else ''}{change.action} {what} {name} ({change.reason})"))
    print(escape(f"colocate: {len(changes)} {'ClusterQueue' if args.cluster_queue else 'TFJob'}(s) "
                 f"{'to ' + args.action if args.dry_run else args.action + 'd'} in {target}"), file=sys.stderr)
    return EXIT_OK


#: The resubmitter's settings past which a value is a mistake, not a policy.
RESUBMISSIONS_LIMIT = 1000
BACKOFF_LIMIT_SECONDS = 86400


def _resubmitter(args: argparse.Namespace) -> int:
    from colocate.incluster.resubmit import main, policy

    for name, top in (("max_resubmissions", RESUBMISSIONS_LIMIT), ("metrics_port", 65535)):
        if not 0 <= getattr(args, name) <= top:
            raise InputError(f"--{name.replace('_', '-')}", str(getattr(args, name)), f"must be from 0 to {top}")
    for name in ("backoff_seconds", "max_backoff_seconds", "blocked_after_seconds", "count_decay_seconds"):
        value = getattr(args, name)
        # NaN compares false with everything, so the range test is written to fail for it.
        if not (math.isfinite(value) and 0 <= value <= BACKOFF_LIMIT_SECONDS):
            raise InputError(f"--{name.replace('_', '-')}", str(value), f"must be a number of seconds from 0 to "
                             f"{BACKOFF_LIMIT_SECONDS} (a day)")
    _listen_address(args.metrics_address)
    if args.max_backoff_seconds < args.backoff_seconds:
        raise InputError("--backoff-seconds", str(args.backoff_seconds),
                         "must be >= 0 and at most --max-backoff-seconds")
    settings = policy.Settings(args.max_resubmissions, args.backoff_seconds, args.max_backoff_seconds,
                               args.blocked_after_seconds, args.count_decay_seconds)
    return main.run(main.Options(tuple(args.namespace), args.lease_namespace, settings, args.metrics_port,
                                 args.metrics_address, args.kubeconfig))


def _listen_address(address: str) -> None:
    """``--metrics-address``: an IP address, or a name that resolves to one (else the bind would
    fail with a gaierror, after the kubeconfig was read)."""
    import ipaddress
    import socket

    try:
        ipaddress.ip_address(address)
        return
    except ValueError:
        pass
    try:
        socket.getaddrinfo(address, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise InputError("--metrics-address", address, "is not an address to listen on: give an IP address "
                         "such as 0.0.0.0 (every interface) or 127.0.0.1") from None


def _simulate(args: argparse.Namespace) -> int:
    import signal
    from colocate.simulate import formats, run, scenario

    dist = Path(args.path) if args.path else _default_dist()
    chosen = scenario.load(args.scenario)
    also = _report_files(args.write, formats.FORMATS, args.force)  # named before minutes of running
    # SIGTERM (CI cancelling a job) stops the simulation's processes as Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    obs, logs = run.simulate(dist, chosen, Path(args.config) if args.config else None, keep_logs=args.keep_logs,
                             log=lambda line: print(line, file=sys.stderr, flush=True),
                             resubmitter=False if args.no_resubmitter else None,
                             render_jobs=lambda paths: _job_files(args.config, paths))
    # The report on stdout first: a file that cannot be written loses neither it nor the run.
    sys.stdout.write(formats.FORMATS[args.format](obs, logs))
    sys.stdout.flush()
    write_reports(also, lambda fmt: formats.FORMATS[fmt](obs, logs), args.force)
    return EXIT_OK if obs.ok else EXIT_FINDINGS


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


def _rules(args: argparse.Namespace) -> int:
    import json
    from colocate import checker

    rules = checker.described_rules(Path(args.config) if args.config else None)
    if args.format == "json":
        print(json.dumps([{"id": r.id, "name": r.name, "severity": r.severity, "category": r.category,
                           "message": r.message, "rationale": r.rationale, "fix": r.fix,
                           "admission": bool(r.admission), "suppressible": r.suppressible} for r in rules], indent=2))
        return EXIT_OK
    if args.format == "markdown":
        sys.stdout.write(rules_markdown(rules))
        return EXIT_OK
    # admission: enforced by a generated ValidatingAdmissionPolicy too (docs/admission.md);
    # never-ignored: no colocate.io/ignore entry silences it.
    for rule in rules:
        mark = "admission" if rule.admission else "check"
        ignore = "ignorable" if rule.suppressible else "never-ignored"
        print(f"{rule.id:7} {rule.severity:8} {mark:9} {ignore:13} {rule.name:40} {rule.rationale}")
    return EXIT_OK


def rules_markdown(rules) -> str:
    """docs/rules.md: every rule's id, severity, category and what it asks, from the rule files."""
    def cell(text: str) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = ["# Policy rules", "",
             "Generated from `policies/rules/*.yaml` with the repository's `colocate.yaml` by",
             "`colocate rules --format markdown > docs/rules.md`; `tests/test_rules_doc.py` fails when it is",
             "stale. `colocate check --explain ID` prints one rule's rationale, with its upstream sources,",
             "and its fix; each rule's failing and passing fixtures are in `tests/policies/fixtures/<ID>/`.",
             "Rules marked **admission** are also enforced by the API server: `admission.policies: true` in",
             "`colocate.yaml` generates a ValidatingAdmissionPolicy for each (docs/admission.md).",
             "A rule that is not **suppressible** keeps one of the platform's promises (the tiers and their",
             "PriorityClasses, tier and GPU isolation, the queue): no `colocate.io/ignore` entry silences it",
             "(docs/commands.md, \"Suppressing a finding\").", "",
             "| id | severity | category | enforced | suppressible | asks |", "|---|---|---|---|---|---|"]
    for rule in sorted(rules, key=lambda r: r.id):
        where = "check, **admission**" if rule.admission else "check"
        ignore = "yes" if rule.suppressible else "no"
        lines.append(f"| {rule.id} | {rule.severity} | {rule.category} | {where} | {ignore} | {cell(rule.message)} |")
    return "\n".join(lines) + "\n"


def _shipped_scenarios() -> str:
    """The names colocate/simulate/scenario.py ``shipped()`` gives, read here without importing the
    simulation at every start (the folder sits at the same place in a wheel)."""
    return ", ".join(sorted(p.stem for p in (Path(__file__).parent / "simulate" / "scenarios").glob("*.yaml")))


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

    s = command("synth", help="synthesize the cluster into dist/")
    s.add_argument("--outdir", help="output folder (default: the repository's dist/)")
    s.add_argument("--jobs", help="folder of job request files (default: the repository's jobs/; "
                                  "none there, or an empty folder, is no job)")
    s.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 and list the files when the output folder is stale")
    s.set_defaults(func=_synth)
    c = command("check", help="validate manifests with kubeconform and the policy rules",
                description="Validate YAML and JSON manifests (files or folders; List items one by one) "
                            "with kubeconform and the policy rules. Folders of Helm charts and Kustomize "
                            "are reported, not checked: render them first.",
                epilog=CHECK_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("paths", nargs="*", help="files or folders, - for standard input (default: dist/ here, else the "
                                            "repository's)")
    c.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                   help="text (grouped by file; colour on a terminal unless NO_COLOR), json, or SARIF 2.1.0")
    c.add_argument("--fail-on", choices=("error", "warning"), default="error",
                   help="lowest severity that makes the exit code 1 (default: error)")
    c.add_argument("--explain", metavar="RULE-ID", help="print a rule's rationale, fix and examples, and exit")
    c.add_argument("--cluster", help="file or folder of NodePool descriptions the capacity rules judge against "
                                     "(it wins over those among the checked files; default: those, else the repository's dist/nodes/)")
    c.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="in checked folders, leave out paths (relative to the folder) or names matching GLOB "
                        "(repeat for more); hidden folders are left out unless named")
    c.add_argument("--timings", action="store_true",
                   help="print the seconds each phase and rule took to stderr, slowest first, and what the cache did")
    caching = c.add_mutually_exclusive_group()
    caching.add_argument("--cache", metavar="DIR",
                   help="folder of the verdict cache, new, empty or holding a CACHEDIR.TAG (default: check/ of "
                        "$COLOCATE_CACHE_DIR, else $XDG_CACHE_HOME/colocate, else ~/.cache/colocate; "
                        "docs/check-cache.md)")
    caching.add_argument("--no-cache", action="store_true",
                   help="check everything afresh; read and write no cache")
    c.set_defaults(func=_check)
    d = command("diff", help="what a change to dist/ does to the cluster, per Argo CD Application",
                       description="Compare dist/ at two git revisions: objects added, removed and changed, "
                                   "dangerous changes first, and the policy findings introduced and resolved.")
    d.add_argument("base", nargs="?", help="git revision (default: the merge-base of HEAD with main)")
    d.add_argument("head", nargs="?", help="git revision (default: the working tree)")
    d.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    d.add_argument("--dist", default="dist", help="folder of the synth output in the repository (default: dist)")
    d.add_argument("--no-policy", action="store_true", help="skip running colocate check on both trees")
    d.add_argument("--no-capacity", action="store_true",
                   help="skip the requests per pool and tier, the quota use and the training queue")
    d.set_defaults(func=_diff)
    k = command("capacity", help="requests per pool and tier against allocatable, and quota use",
                epilog="exit codes: 0 everything fits; 1 a pool or a quota is OVER (past allocatable or hard); "
                       "2 unusable input")
    k.add_argument("path", nargs="?", default=str(_root() / "dist"), help="dist/ folder (default: the repository's dist/)")
    k.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    k.set_defaults(func=_capacity)
    o = command("report", help="the co-location headline from a Prometheus: utilisation, P99, preemptions",
                       description="Ask a Prometheus (HTTP API) for the co-location headline figures: utilisation per "
                                   "pool, night against day; P99 against baseline per online service while training "
                                   "ran beside it; training pods preempted; GPU-hours delivered to training.")
    o.add_argument("--prometheus", required=True, help="Prometheus base URL, e.g. http://localhost:9090")
    o.add_argument("--since", default="24h", help="how far back: 30m, 24h, 7d (default 24h)")
    o.add_argument("--until", help="end of the window, RFC 3339 or unix seconds (default: now)")
    o.add_argument("--step", default="5m", help="resolution of the range queries (default 5m)")
    o.add_argument("--night", default="22-6", help="night hours START-END, local (default 22-6)")
    o.add_argument("--timezone", default="UTC", help="time zone of --night (default UTC)")
    o.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    o.set_defaults(func=_report)
    f = command("offline", help="pause or resume the batch load (suspend running TFJobs)",
                       description="pause: suspend every unfinished TFJob (training-operator deletes its pods and "
                                   "keeps the job); resume: un-suspend the TFJobs that pause suspended. Reaches the "
                                   "cluster through --kubeconfig, $KUBECONFIG or ~/.kube/config (current context), "
                                   "else the pod's service account (the CronJobs synth emits). Runbook: docs/runbook-latency.md.")
    f.add_argument("action", choices=("pause", "resume"))
    f.add_argument("--cluster-queue", help="hold (pause) or release (resume) this Kueue ClusterQueue (default with a "
                                           "kueue section in colocate.yaml: the cluster's training queue)")
    f.add_argument("--namespace", action="append", help="without --cluster-queue: suspend the TFJobs of this "
                   "namespace one by one (default without Kueue: the cluster's training namespace); with it: where "
                   "resume waits for the paused pods to be gone before releasing the queue (repeat for more)")
    f.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
    f.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    f.set_defaults(func=_offline)
    r = command("resubmitter", help="run the controller that resubmits TFJobs a disruption failed",
                description="Watch the TFJobs and their pods in --namespace; when a pod is disrupted (its "
                            "DisruptionTarget condition: preempted, evicted, tainted away, or stopped by the kubelet) "
                            "and its TFJob then fails, re-create the TFJob under the same name after an exponential "
                            "backoff, so it resumes from its checkpoint. A genuine failure is never resubmitted. "
                            "Leader election on a Lease; Prometheus metrics on --metrics-port. docs/resubmission.md.")
    r.add_argument("--namespace", action="append", required=True, help="a training namespace (repeat for more)")
    r.add_argument("--lease-namespace", required=True, help="namespace of the leader-election Lease")
    r.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)")
    r.add_argument("--max-resubmissions", type=int, default=5, help="resubmissions per job before it is given up "
                   "(default 5; a job's colocate.io/max-resubmissions annotation overrides it)")
    r.add_argument("--backoff-seconds", type=float, default=30.0, help="delay before the first resubmission, "
                   "doubled for each one after it (default 30)")
    r.add_argument("--max-backoff-seconds", type=float, default=900.0, help="the longest delay (default 900)")
    r.add_argument("--blocked-after-seconds", type=float, default=300.0, help="how long a deleted job's pods may "
                   "take to go before the resubmission counts as blocked: metric, Event, alert (default 300)")
    r.add_argument("--count-decay-seconds", type=float, default=7200.0, help="a job that ran this long before its "
                   "disruption starts its resubmission count again (default 7200)")
    r.add_argument("--metrics-port", type=int, default=8080, help="port of /metrics (default 8080)")
    r.add_argument("--metrics-address", default="0.0.0.0", help="address /metrics listens on (default 0.0.0.0)")
    r.set_defaults(func=_resubmitter)
    m = command("simulate", help="sync dist/ into the real Kubernetes components on loopback and report placement",
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
    m.add_argument("path", nargs="?", help="dist/ folder (default: dist/ here, else the repository's)")
    m.add_argument("--scenario", default="night", help=f"a shipped scenario ({_shipped_scenarios()}; default "
                   "night), or a scenario file")
    m.add_argument("--no-resubmitter", action="store_true", help="do not run colocate resubmitter: see what "
                   "training-operator v1.7.0 alone does to preempted TFJobs")
    m.add_argument("--format", choices=("text", "json", "markdown", "html"), default="text",
                   help="html: a self-contained page with the day's charts")
    m.add_argument("--write", action="append", default=[], metavar="FORMAT:FILE",
                   help="also write the report in FORMAT to FILE (repeatable): one run gives, say, the "
                        "Markdown of a pull-request comment on stdout and --write html:day.html")
    m.add_argument("--force", action="store_true", help="let --write replace a regular file that exists (never a "
                   "link, folder, FIFO or device)")
    m.add_argument("--keep-logs", action="store_true", help="keep the components' logs (kept anyway on failure)")
    m.set_defaults(func=_simulate)
    i = command("init", help="write a starter colocate.yaml (the reference configuration) to edit")
    i.add_argument("folder", nargs="?", default=".", help="where (default: here); an existing colocate.yaml is kept")
    i.set_defaults(func=_init)
    r = command("rules", help="list every policy rule")
    r.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                   help="markdown: the table of docs/rules.md")
    r.set_defaults(func=_rules)
    return p


def _root() -> Path:
    from colocate.base.data_files import repository

    return repository()


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


if __name__ == "__main__":
    sys.exit(main())

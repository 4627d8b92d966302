"""``colocate report``: the co-location headline from a Prometheus."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from colocate.cli.common import EXIT_OK


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("report", help="the co-location headline from a Prometheus: utilisation, P99, preemptions",
                       description="Ask a Prometheus (HTTP API) for the co-location headline figures: utilisation per "
                                   "pool, night against day; P99 against baseline per online service while training "
                                   "ran beside it; training pods preempted; GPU-hours delivered to training.")
    p.add_argument("--prometheus", required=True, help="Prometheus base URL, e.g. http://localhost:9090")
    p.add_argument("--since", default="24h", help="how far back: 30m, 24h, 7d (default 24h)")
    p.add_argument("--until", help="end of the window, RFC 3339 or unix seconds (default: now)")
    p.add_argument("--step", default="5m", help="resolution of the range queries (default 5m)")
    p.add_argument("--night", default="22-6", help="night hours START-END, local (default 22-6)")
    p.add_argument("--timezone", default="UTC", help="time zone of --night (default UTC)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from colocate import config as config_mod
    from colocate.report import formats as report_formats, headline
    from colocate.mixin.config import MixinConfig
    from colocate.report.prometheus_api import Prometheus

    prom = Prometheus(args.prometheus)
    start, end = headline.window(args.until, args.since)
    night = headline.Night.parse(args.night, args.timezone)
    mixin = MixinConfig.from_cluster((config_mod.load(Path(args.config)) if args.config else config_mod.load()).cluster)
    result = headline.build(prom, mixin, start=start, end=end, step=headline.duration(args.step, "--step"), night=night)
    sys.stdout.write(report_formats.FORMATS[args.format](result))
    return EXIT_OK

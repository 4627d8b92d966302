"""colocate.model.cron against robfig/cron v3.0.1 ParseStandard, which the API server runs on every
CronJob (kubernetes v1.28.15 pkg/apis/batch/validation/validation.go validateScheduleFormat). Each
verdict is read off parser.go: getRange, parseIntOrName, mustParseInt (strconv.Atoi), the bounds
of spec.go and parseDescriptor."""
from __future__ import annotations

import pytest

from colocate.model.cron import schedule_error

ACCEPTED = [
    "50 7 * * *", "*/5 * * * *", "0 0 1 JAN,jul *", "0-59/15 0 * * SUN-SAT", "? * * * ?", "5/10 * * * *",
    "0 22 * * 1-5", "0,30 8-18 * * mon", "+5 * * * *", "0 0 31 12 6", "@daily", "@midnight", "@hourly",
    "@weekly", "@monthly", "@yearly", "@annually", "@every 1h30m", "@every 90s", "@every 1.5h", " 0  0 * * * ",
]
REFUSED = {
    "50.0 7.0 * * *": "failed to parse int from 50.0",
    "* * * *": "expected exactly 5 fields, found 4",
    "* * * * * *": "expected exactly 5 fields, found 6",
    "60 * * * *": "end of range (60) above maximum (59)",
    "* 24 * * *": "end of range (24) above maximum (23)",
    "* * 0 * *": "beginning of range (0) below minimum (1)",
    "* * * 13 *": "end of range (13) above maximum (12)",
    "* * * * 7": "end of range (7) above maximum (6)",
    "5-1 * * * *": "beginning of range (5) beyond end of range (1)",
    "*/0 * * * *": "step of range should be a positive number",
    "1-2-3 * * * *": "too many hyphens",
    "1/2/3 * * * *": "too many slashes",
    "-1 * * * *": "failed to parse int from ",
    "1_0 * * * *": "failed to parse int from 1_0",
    "\u0661 * * * *": "failed to parse int from",
    "* * * FOO *": "failed to parse int from FOO",
    "@every 1x": "failed to parse duration",
    "@every ": "failed to parse duration",
    "@reboot": "unrecognized descriptor",
    "TZ=UTC 0 0 * * *": "cannot use TZ or CRON_TZ in schedule",
    "CRON_TZ=Europe/Berlin 0 0 * * *": "cannot use TZ or CRON_TZ in schedule",
    "": "empty spec string",
}


@pytest.mark.parametrize("schedule", ACCEPTED)
def test_schedules_robfig_cron_parses(schedule):
    assert schedule_error(schedule) == ""


@pytest.mark.parametrize("schedule, why", sorted(REFUSED.items()))
def test_schedules_robfig_cron_refuses(schedule, why):
    assert why in schedule_error(schedule)

"""CronJob schedules as the API server parses them: robfig/cron v3.0.1 ``ParseStandard``
(parser.go, spec.go), which kubernetes v1.28.15 pkg/apis/batch/validation/validation.go
``validateScheduleFormat`` calls on every CronJob, and refuses ``TZ`` anywhere in a new one."""
from __future__ import annotations

import re

#: (name, min, max, names) of the five fields (spec.go bounds).
_MONTHS = {m: i for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov",
                                       "dec"), 1)}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
FIELDS = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day of month", 1, 31, {}), ("month", 1, 12, _MONTHS),
          ("day of week", 0, 6, _DAYS))
DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
#: strconv.Atoi: an optional sign, then ASCII digits (Python's int() also takes "1_0", " 7 ", "٣").
_ATOI = re.compile(r"[+-]?[0-9]+")
#: time.ParseDuration (Go 1.20): [-+] then one or more decimal numbers with a unit, or "0".
_DURATION = re.compile(r"[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+|[-+]?0")
_INT64_MAX = 2**63 - 1


def schedule_error(schedule: str) -> str:
    """Why the API server refuses this schedule on a new CronJob; "" when it accepts it."""
    if "TZ" in schedule:
        return "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    if not schedule:
        return "empty spec string"
    if schedule.startswith("@"):
        if schedule in DESCRIPTORS:
            return ""
        every = "@every "
        if schedule.startswith(every):
            return "" if _DURATION.fullmatch(schedule[len(every):]) else f"failed to parse duration {schedule}"
        return f"unrecognized descriptor: {schedule}"
    fields = schedule.split()
    if len(fields) != len(FIELDS):
        return f"expected exactly {len(FIELDS)} fields, found {len(fields)}: {fields}"
    for text, (name, low, high, names) in zip(fields, FIELDS):
        for expr in (part for part in text.split(",") if part):
            why = _range_error(expr, low, high, names)
            if why:
                return f"{name}: {why}"
    return ""


def _int(expr: str, names: dict[str, int] | None = None) -> int | str:
    """parseIntOrName / mustParseInt: the number, or why it is none."""
    if names and expr.lower() in names:
        return names[expr.lower()]
    if not _ATOI.fullmatch(expr) or abs(int(expr)) > _INT64_MAX:
        return f"failed to parse int from {expr}"
    if int(expr) < 0:
        return f"negative number ({int(expr)}) not allowed: {expr}"
    return int(expr)


def _range_error(expr: str, low: int, high: int, names: dict[str, int]) -> str:
    """getRange: number | number "-" number [ "/" number ], or * and ? for the whole range."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int(low_and_high[0], names)
        if isinstance(start, str):
            return start
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int(low_and_high[1], names)
            if isinstance(end, str):
                return end
        else:
            return f"too many hyphens: {expr}"
    step: int | str = 1
    if len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if isinstance(step, str):
            return step
        if len(low_and_high) == 1:
            end = high
    elif len(range_and_step) > 2:
        return f"too many slashes: {expr}"
    if start < low:
        return f"beginning of range ({start}) below minimum ({low}): {expr}"
    if end > high:
        return f"end of range ({end}) above maximum ({high}): {expr}"
    if start > end:
        return f"beginning of range ({start}) beyond end of range ({end}): {expr}"
    if step == 0:
        return f"step of range should be a positive number: {expr}"
    return ""

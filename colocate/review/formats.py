"""Render a Review as text (terminal), Markdown (pull-request comment) or JSON."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Callable, Sequence

from colocate.base.text import code_span, escape, escape_lines, markdown
from colocate.checker import Finding
from colocate.model.names import GPU
from colocate.review import usage, quota
from colocate.review.usage import Delta, Usage
from colocate.review.quota import QuotaDelta, QuotaUse
from colocate.review.queue import QueueDelta, QueuedJob, QueueUse
from colocate.review.diff import ADDED, CHANGED, REMOVED, ObjectChange, Review

JSON_VERSION = 1
#: GitHub refuses comments over 65,536 characters; leave room for the workflow's marker line.
MARKDOWN_LIMIT = 60_000
#: Values longer than this are cut, with the count of what was left out.
VALUE_WIDTH = 80
#: Per object, per list: the rest is counted, not shown.
MAX_FIELDS = 15
MAX_ITEMS = 50


def show(value: Any, width: int = VALUE_WIDTH) -> str:
    """A value on one line: ``(absent)``, a plain string, or compact JSON; cut to ``width``."""
    if value is None:
        return "(absent)"
    text = value if isinstance(value, str) and "\n" not in value and "`" not in value else \
        json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= width else f"{text[:width]}… (+{len(text) - width} chars)"


def _counts(changes: list[ObjectChange] | tuple[ObjectChange, ...]) -> dict[str, int]:
    return {s: sum(c.status == s for c in changes) for s in (ADDED, REMOVED, CHANGED)}


def _headline(r: Review) -> str:
    n = _counts(r.changes)
    apps = r.by_app()
    policy = "" if r.policy is None else \
        f"; policy: {len(r.policy.introduced)} findings introduced, {len(r.policy.resolved)} resolved"
    over = [d for d in r.capacity or () if d.over]
    full = f"; {len(over)} pool requests over allocatable" if over else ""
    refused = [q for q in r.quota or () if q.over]
    full += f"; {len(refused)} quotas exceeded" if refused else ""
    full += f"; {len(r.unfit)} pods fit no node" if r.unfit else ""
    waits = sum(len(q.newly_waiting) for q in r.queues)
    full += f"; {_plural(waits, 'job')} newly {'waits' if waits == 1 else 'wait'} in the queue" if waits else ""
    verb = "differs" if len(r.changes) == 1 else "differ"
    return (f"{_plural(len(r.changes), 'object')} {verb} in {_plural(len(apps), 'Application')} "
            f"({n[ADDED]} added, {n[REMOVED]} removed, "
            f"{n[CHANGED]} changed); {len(r.dangerous)} dangerous{policy}{full}")


def _unfit(u: usage.Unfit) -> str:
    role = f" {u.role}" if u.role else ""
    return (f"{u.object}{role} pods request {u.request}, more than one {u.pool} node's allocatable ({u.node}): "
            f"they never schedule")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _finding(f: Finding) -> str:
    where = f"{f.field}: " if f.field else ""
    return f"{f.severity.upper()} {f.rule} {f.file} {f.ref}: {where}{f.message}"


def _capped(items: list, line: Callable[[Any], str]) -> list[str]:
    out = [line(i) for i in items[:MAX_ITEMS]]
    if len(items) > MAX_ITEMS:
        out.append(f"… and {len(items) - MAX_ITEMS} more")
    return out


def _field_lines(change: ObjectChange, fmt: Callable[[str, str, str], str]) -> list[str]:
    out = [fmt(f.path, show(f.old), show(f.new)) for f in change.fields[:MAX_FIELDS]]
    if len(change.fields) > MAX_FIELDS:
        out.append(f"… and {len(change.fields) - MAX_FIELDS} more fields")
    return out


def to_text(r: Review) -> str:
    lines = [f"colocate diff {r.base} .. {r.head}: {_headline(r)}"]
    if not r.changes:
        lines.append("no change to any object")
    if r.dangerous or r.unfit:
        lines.append("\nDANGEROUS")
        for c in r.dangerous:
            lines += [f"  ! {c.status} {c.key} ({c.app}): {d.reason}" for d in c.dangers]
        lines += [f"  ! {_unfit(u)}" for u in r.unfit]
    if r.policy and (r.policy.introduced or r.policy.resolved):
        lines.append("\nPOLICY")
        lines += [f"  + {_finding(f)}" for f in r.policy.introduced]
        lines += [f"  - {_finding(f)}" for f in r.policy.resolved]
    if r.capacity:
        lines.append(f"\nCAPACITY (requests; {_ALLOC_NOTE})")
        lines += [f"  {' '.join(cells[:3])}: {cells[3]} -> {cells[4]} ({cells[5]}) of {cells[6]}{cells[7]}"
                  for cells in map(_delta_cells, r.capacity)]
    if r.quota:
        lines.append("\nQUOTA (used of hard)")
        lines += [f"  {c[0]} {c[1]}: {c[2]} -> {c[3]} of {c[4]} -> {c[5]}{c[6]}" for c in map(_quota_cells, r.quota)]
    if r.queues:
        lines.append(f"\nQUEUE ({_QUEUE_NOTE})")
        for q in r.queues:
            c = _queue_delta_cells(q)
            lines.append(f"  {c[0]}: jobs {c[1]}, admitted {c[2]}, waiting {c[3]}; {GPU} waiting {c[4]} of quota {c[5]}; "
                         f"GPU-hours waiting {c[6]} of the night's {c[7]}")
            lines += [f"    + {_waits(j)}" for j in q.newly_waiting]
            lines += [f"    - {_admitted(j)}" for j in q.newly_admitted]
    for app, changes in r.by_app().items():
        lines.append(f"\n{app}")
        for c in changes:
            lines.append(f"  {c.status:8} {c.key}  ({c.file})")
            lines += [f"      {p}: {o} -> {n}" for p, o, n in ((f.path, show(f.old), show(f.new)) for f in c.fields)]
    return "\n".join(escape_lines(lines)) + "\n"


_ALLOC_NOTE = "allocatable of each revision's own pools, its dist/nodes/"
_QUEUE_NOTE = ("Kueue, the first night: jobs admitted in name order, each that fits what is left of the "
               "ClusterQueue's quota; a waiting job is suspended and counts in no pool or quota above")


def _waits(j: QueuedJob) -> str:
    return (f"{j.name} ({_job_size(j)}) waits in the queue: it does not fit what is left of the night's "
            "quota; Kueue admits it when quota frees (not a failure)")


def _admitted(j: QueuedJob) -> str:
    return f"{j.name} ({_job_size(j)}) no longer waits: the first night admits it"


def _job_size(j: QueuedJob) -> str:
    """``4 nvidia.com/gpu x 2.5 h = 10 GPU-hours``, or that its GPU-hours are unknown."""
    gpus = f"{j.requests.gpus} {GPU}"
    if not j.requests.gpus:
        return gpus
    if j.hours is None:
        return f"{gpus}, GPU-hours unknown: its job file gives no expectedHours"
    return f"{gpus} x {_hours(j.hours)} h = {_hours(j.gpu_hours or 0)} GPU-hours"


def _hours(value: float) -> str:
    """``118``, ``2.5``: one decimal at most (``<0.1`` for less, never a 0 that is not)."""
    return "<0.1" if 0 < value < 0.05 else f"{value:.1f}".removesuffix(".0")


def _gpu_hours_waiting(u: QueueUse) -> str:
    """The waiting GPU-hours that are known, and how many waiting jobs have none."""
    unknown = len(u.unestimated)
    return _hours(u.waiting_gpu_hours) + (f" (+{unknown} {'job' if unknown == 1 else 'jobs'} without expectedHours)"
                                          if unknown else "")


def _night_gpu_hours(u: QueueUse) -> str:
    return "- (no schedule)" if u.night_gpu_hours is None else _hours(u.night_gpu_hours)


def _queue_delta_cells(q: QueueDelta) -> list[str]:
    """ClusterQueue, then before -> after of: jobs, admitted, waiting, GPUs waiting, GPU quota,
    GPU-hours waiting, the night's GPU-hours."""
    def pair(value) -> str:
        old, new = (None if u is None else str(value(u)) for u in (q.before, q.after))
        return (old or "-") if old == new else f"{old or '-'} -> {new or '-'}"

    return [q.cluster_queue, pair(lambda u: len(u.jobs)), pair(lambda u: len(u.admitted)),
            pair(lambda u: len(u.waiting)), pair(lambda u: u.waiting_gpus), pair(lambda u: u.quota.gpus),
            pair(_gpu_hours_waiting), pair(_night_gpu_hours)]


def _printer(resource: str):
    return next(p for name, _, p in usage.RESOURCES if name == resource)


def _delta_cells(d: Delta) -> list[str]:
    """pool, tier, resource, before, after, delta, allocatable, and an over-allocatable note."""
    show_ = _printer(d.resource)
    alloc = "-" if d.allocatable is None else show_(d.allocatable)
    return [d.pool, d.tier, d.resource, show_(d.before), show_(d.after), usage.signed(d.after - d.before, show_),
            alloc, " (over allocatable: pods stop fitting)" if d.over else ""]


def _quota_cells(q: QuotaDelta) -> list[str]:
    """namespace/quota, resource, used before, used after, hard before, hard after, a note."""
    show_ = quota.printer(q.resource)
    hard = ["-" if h is None else show_(h) for h in (q.hard_before, q.hard_after)]
    return [f"{q.namespace}/{q.quota}", q.resource, show_(q.used_before), show_(q.used_after), *hard,
            " (exceeded: the quota refuses the pods past it)" if q.over else ""]


def _md_code(text: str) -> str:
    return code_span(text)


def to_markdown(r: Review, limit: int = MARKDOWN_LIMIT) -> str:
    """Summary table first (every Application touched), dangers and policy impact, then the
    details collapsed per Application; details stop at an object boundary to stay under ``limit``
    characters."""
    apps = r.by_app()
    head = [f"### colocate diff: {_md_code(r.base)} → {_md_code(r.head)}", "", f"**{_headline(r)}**", ""]
    if not r.changes:
        head.append("No change to any object.")
    else:
        head += ["| Argo CD Application | added | removed | changed | dangerous |", "|---|---:|---:|---:|---:|"]
        for app, changes in apps.items():
            n = _counts(changes)
            head.append(f"| {markdown(app)} | {n[ADDED]} | {n[REMOVED]} | {n[CHANGED]} | {sum(bool(c.dangers) for c in changes)} |")
    if r.dangerous or r.unfit:
        head += ["", "#### ⚠️ Dangerous changes", ""]
        head += _capped([(c, d) for c in r.dangerous for d in c.dangers],
                        lambda cd: f"- **{cd[0].status}** {_md_code(str(cd[0].key))} ({markdown(cd[0].app)}): "
                                   f"{markdown(cd[1].reason)}")
        head += _capped(list(r.unfit), lambda u: f"- {markdown(_unfit(u))}")
    if r.policy and (r.policy.introduced or r.policy.resolved):
        head += ["", f"#### Policy: {len(r.policy.introduced)} introduced, {len(r.policy.resolved)} resolved", ""]
        head += _capped(list(r.policy.introduced), lambda f: f"- ➕ {_md_code(_finding(f))}")
        head += _capped(list(r.policy.resolved), lambda f: f"- ✔️ resolved: {_md_code(_finding(f))}")
    if r.capacity:
        head += ["", f"#### Capacity: requests per pool and tier ({_ALLOC_NOTE})", "",
                 "| pool | tier | resource | before | after | delta | allocatable |", "|---|---|---|---:|---:|---:|---:|"]
        head += _capped(list(r.capacity), lambda d: "| " + " | ".join(map(markdown, _delta_cells(d)[:6])) + " | "
                        + _delta_cells(d)[6] + ("⚠️ over" if d.over else "") + " |")
    if r.quota:
        head += ["", "#### ResourceQuota use", "",
                 "| namespace/quota | resource | used before | used after | hard before | hard after |",
                 "|---|---|---:|---:|---:|---:|"]
        head += _capped(list(r.quota), lambda q: "| " + " | ".join(map(markdown, _quota_cells(q)[:6])) + (" ⚠️ exceeded" if q.over else "")
                        + " |")
    if r.queues:
        head += ["", "#### Training queue", "", f"_{markdown(_QUEUE_NOTE)}._", "",
                 f"| ClusterQueue | jobs | admitted | waiting | {GPU} waiting | {GPU} quota | GPU-hours waiting "
                 "| night's GPU-hours |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        head += ["| " + " | ".join(markdown(c.replace(" -> ", " → ")) for c in _queue_delta_cells(q)) + " |"
                 for q in r.queues]
        moved = [(j, "⏳", _waits) for q in r.queues for j in q.newly_waiting] + \
            [(j, "▶️", _admitted) for q in r.queues for j in q.newly_admitted]
        head += [""] if moved else []
        head += _capped(moved, lambda m: f"- {m[1]} {markdown(m[2](m[0]))}")
    text = "\n".join(head) + "\n"
    if r.changes:
        text += "\n#### Details\n"
    shown = 0
    for app, changes in apps.items():
        n = _counts(changes)
        opening = (f"\n<details><summary><b>{markdown(app)}</b>: {n[ADDED]} added, {n[REMOVED]} removed, "
                   f"{n[CHANGED]} changed</summary>\n\n")
        closing = "\n</details>\n"
        block = opening
        for c in changes:
            entry = f"- **{c.status}** {_md_code(str(c.key))} ({_md_code(c.file)})\n" + "".join(
                f"  - {line}\n" for line in _field_lines(c, lambda p, o, n_: f"{_md_code(p)}: {_md_code(o)} → {_md_code(n_)}"))
            notice = _cut_notice(len(r.changes) - shown)
            if len(text) + len(block) + len(entry) + len(closing) + len(notice) >= limit:
                return text + (block + closing if block != opening else "") + notice
            block += entry
            shown += 1
        text += block + closing
    return text


def _cut_notice(hidden: int) -> str:
    return (f"\n_{hidden} more objects not shown (comment size limit): "
            f"run `colocate diff` locally for the full list._\n")


def to_json(r: Review) -> str:
    def change(c: ObjectChange) -> dict:
        return {"application": c.app, "status": c.status, "kind": c.key.kind, "group": c.key.group,
                "namespace": c.key.namespace, "name": c.key.name, "file": c.file,
                "fields": [{"path": f.path, "old": f.old, "new": f.new} for f in c.fields],
                "dangers": [{"rank": d.rank, "reason": d.reason} for d in c.dangers]}

    doc: dict[str, Any] = {
        "version": JSON_VERSION, "base": r.base, "head": r.head,
        "summary": {**_counts(r.changes), "applications": list(r.by_app()), "dangerous": len(r.dangerous)},
        "dangerous": [change(c) for c in r.dangerous],
        "changes": [change(c) for c in r.changes],
    }
    if r.capacity is not None:
        doc["capacity"] = [asdict(d) for d in r.capacity]
    if r.quota is not None:
        doc["quota"] = [asdict(q) for q in r.quota]
        doc["unfit"] = [asdict(u) for u in r.unfit]
    if r.capacity is not None:
        doc["queues"] = [{"clusterQueue": q.cluster_queue,
                          "before": None if q.before is None else _queue_json(q.before),
                          "after": None if q.after is None else _queue_json(q.after),
                          "newlyWaiting": [asdict(j) for j in q.newly_waiting],
                          "newlyAdmitted": [asdict(j) for j in q.newly_admitted]} for q in r.queues]
    if r.policy is not None:
        doc["policy"] = {"introduced": [asdict(f) for f in r.policy.introduced],
                         "resolved": [asdict(f) for f in r.policy.resolved]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


FORMATS = {"text": to_text, "markdown": to_markdown, "json": to_json}


def _capacity_table(u: Usage) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the per-pool table: requests by tier, total, allocatable, share."""
    header = ["pool", "resource", *u.tiers, "requested", "allocatable", "used"]
    body = []
    for row in usage.rows(u):
        show_ = _printer(row.resource)
        used = _share(row.total, row.allocatable)
        body.append([row.pool, row.resource, *(show_(row.by_tier[t]) if t in row.by_tier else "-" for t in u.tiers),
                     show_(row.total), "-" if row.allocatable is None else show_(row.allocatable), used])
    return header, body


def _share(used: float, available: float | None) -> str:
    """``24%``, or ``112% OVER`` past what there is (the API server or the scheduler refuses the rest)."""
    if not available:
        return "-" if not used else "OVER"
    return f"{100 * used / available:.0f}%" + (" OVER" if used > available else "")


def over_committed(u: Usage, uses: list[QuotaUse]) -> bool:
    """A pool's requests past its allocatable, or a quota's use past its hard limit."""
    return any(row.allocatable is not None and row.total > row.allocatable for row in usage.rows(u)) or \
        any(q.used > q.hard for q in uses)


def _quota_table(uses: list[QuotaUse]) -> tuple[list[str], list[list[str]]]:
    body = [[f"{q.namespace}/{q.quota}", q.resource, quota.printer(q.resource)(q.used), quota.printer(q.resource)(q.hard),
             _share(q.used, q.hard)] for q in uses]
    return ["quota", "resource", "used", "hard", "share"], body


def _columns(header: list[str], body: list[list[str]]) -> str:
    body = [[escape(c) for c in cells] for cells in body]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in [header, *body]) + "\n"


def _md_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * 2 + "---:|" * (len(header) - 2)]
    return "\n".join(lines + ["| " + " | ".join(map(markdown, cells)) + " |" for cells in body]) + "\n"


def _queue_table(queues: Sequence[QueueUse]) -> tuple[list[str], list[list[str]]]:
    """Per ClusterQueue: jobs, how many the first night starts and how many wait, GPUs asked and held."""
    body = [[q.cluster_queue, str(len(q.jobs)), str(len(q.jobs) - len(q.waiting)), str(len(q.waiting)),
             str(q.demand.gpus), str(q.quota.gpus), _gpu_hours_waiting(q), _night_gpu_hours(q),
             ", ".join(j.name for j in q.waiting) or "-"] for q in queues]
    return ["queue", "jobs", "admitted", "waiting", f"{GPU} asked", f"{GPU} quota", "GPU-hours waiting",
            "night's GPU-hours", "waits"], body


def capacity_text(u: Usage, uses: list[QuotaUse], queues: Sequence[QueueUse] = ()) -> str:
    return (_columns(*_capacity_table(u)) + ("\n" + _columns(*_quota_table(uses)) if uses else "")
            + ("\n" + _columns(*_queue_table(queues)) if queues else ""))


def capacity_markdown(u: Usage, uses: list[QuotaUse], queues: Sequence[QueueUse] = ()) -> str:
    return (_md_table(*_capacity_table(u)) + ("\n" + _md_table(*_quota_table(uses)) if uses else "")
            + ("\n" + _md_table(*_queue_table(queues)) if queues else ""))


def capacity_json(u: Usage, uses: list[QuotaUse], queues: Sequence[QueueUse] = ()) -> str:
    rows = [{**asdict(r), "byTier": r.by_tier} for r in usage.rows(u)]
    for r in rows:
        del r["by_tier"]
    return json.dumps({"version": JSON_VERSION, "units": {"cpu": "millicores", "memory": "bytes", GPU: "devices"},
                       "rows": rows, "quotas": [asdict(q) for q in uses],
                       "queues": [{"clusterQueue": q.cluster_queue, **_queue_json(q)} for q in queues]},
                      indent=2, sort_keys=True) + "\n"


def _queue_json(q: QueueUse) -> dict:
    """One ClusterQueue's first night, in capacity's and diff's JSON alike."""
    return {"quota": asdict(q.quota), "demand": asdict(q.demand), "jobs": [asdict(j) for j in q.jobs],
            "admitted": len(q.admitted), "waiting": len(q.waiting), "waitingGpus": q.waiting_gpus,
            # Known GPU-hours only: the waiting jobs without an estimate are listed, not guessed.
            "waitingGpuHours": q.waiting_gpu_hours, "unestimated": [j.name for j in q.unestimated],
            "nightHours": q.night_hours, "nightGpuHours": q.night_gpu_hours}


CAPACITY_FORMATS = {"text": capacity_text, "markdown": capacity_markdown, "json": capacity_json}

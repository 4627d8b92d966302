"""Renderers of a simulation's Observation: text for a terminal, JSON for tools, Markdown for a
pull-request comment. One model, three views."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from colocate.model import quantity
from colocate.base.text import code_span, escape_lines, markdown
from colocate.model.names import BLOCKED_METRIC, GPU
from colocate.simulate import charts, rollouts
from colocate.simulate.charts import OFFLINE
from colocate.simulate.observe import Observation
from colocate.simulate.queue_chart import queue_chart


#: Why a preempted TFJob fails instead of waiting (docs/resubmission.md).
PREEMPTION_FAILS_JOBS = ("training-operator v1.7.0 counts a preempted (terminating, still Running) pod as a failed "
                         "replica and fails the whole TFJob for good; `colocate resubmitter` re-creates such a job "
                         "(it did not run here, or gave up), and `colocate offline pause` keeps a planned peak "
                         "from preempting at all; docs/resubmission.md")


def _verdict(obs: Observation) -> str:
    if obs.ok:
        waiting = len(obs.pending)
        text = ("every pod placed" if not waiting else
                f"every pod placed except {waiting} {'/'.join(obs.may_wait)} pod(s) the scenario lets wait")
        if obs.steps:
            text += f", every online pod placed at each of {len(obs.steps)} steps"
        resubmitted = sum(len(m) for m in obs.resubmissions.values())
        if resubmitted:
            text += f"; {resubmitted} disrupted TFJob resubmission(s)"
        return text
    parts = [f"the change failed to sync or roll out in {len(obs.change_failed)} place(s)" if obs.change_failed else "",
             f"{len(obs.rejected)} object(s) rejected" if obs.rejected else "",
             f"{len(obs.failed_creates)} workload(s) could not create pods" if obs.failed_creates else "",
             f"{len(obs.failing_pending)} pod(s) Pending" if obs.failing_pending else "",
             "" if obs.settled and all(st.settled for st in obs.steps) else "the cluster did not settle",
             f"online pods unplaced at {', '.join(obs.unplaced_online_steps)}" if obs.unplaced_online_steps else "",
             ", ".join(f"TFJob {n} Failed" + (" by disruption" if n in obs.failed_by_preemption else "")
                       for n in obs.failed_jobs)]
    return "NOT SAFE: " + "; ".join(p for p in parts if p)


def _use(requested, allocatable) -> str:
    cpu = sum(t["cpu"] for t in requested.values())
    mem = sum(t["memory"] for t in requested.values())
    gpu = sum(t[GPU] for t in requested.values())
    text = (f"cpu {quantity.format_cpu(cpu)}/{quantity.format_cpu(allocatable['cpu'])}, "
            f"memory {quantity.format_bytes(mem)}/{quantity.format_bytes(allocatable['memory'])}")
    return text + (f", gpu {gpu}/{allocatable[GPU]}" if allocatable[GPU] else "")


def _tiers(requested) -> str:
    return ", ".join(f"{tier} cpu {quantity.format_cpu(r['cpu'])} mem {quantity.format_bytes(r['memory'])}"
                     + (f" gpu {r[GPU]}" if r[GPU] else "") for tier, r in sorted(requested.items()))


def _sections(obs: Observation) -> list[tuple[str, list[str]]]:
    placed = [p for p in obs.pods if p.node]
    return [
        ("What the sync of this change did", _change_lines(obs)),
        ("Rejected by the API server", [f"{r.object} ({r.source}): {r.message}" for r in obs.rejected]),
        ("Workloads that could not create pods", [f"{p.object}: {p.reason}: {p.message}" for p in obs.failed_creates]),
        ("Pending pods", [f"{p.namespace}/{p.name} ({p.tier}, {p.owner})"
                          + (" [allowed to wait in this scenario]" if p.tier in obs.may_wait else "")
                          + f": {p.reason or 'not yet scheduled'}" for p in obs.pending]),
        ("Preempted", [f"{p.victim} on {p.node}, for {p.preemptor}" for p in obs.preemptions]),
        ("Placement (requests / allocatable)", [f"{n.node} [{n.pool}] {n.pods} pods: {_use(n.requested, n.allocatable)}"
                                                + (f" ({_tiers(n.requested)})" if n.requested else "")
                                                for n in obs.nodes]),
        ("TFJobs", [f"{name}: {state}" + (f" ({obs.tfjob_messages[name]})" if state == "Failed" else "")
                    for name, state in sorted(obs.tfjobs.items())]),
        ("Delete drill (what deleting each Application deletes, stateful first)",
         [f"{app}: {len(gone)} objects: {', '.join(gone) or 'nothing'}" for app, gone in obs.drills.items()]),
        ("TFJobs failed by disruption", [f"{name} (lost {', '.join(p.split('/', 1)[1] for p in obs.disrupted_pods()[name])})"
                                         f": {PREEMPTION_FAILS_JOBS}" for name in obs.failed_by_preemption]),
        ("Resubmitted (colocate resubmitter)", [f"{name}: {m}" for name, msgs in sorted(obs.resubmissions.items())
                                                for m in msgs]),
        ("Given up (resubmission cap)", [f"{name}: {m}" for name, msgs in sorted(obs.given_up.items()) for m in msgs]),
        ("Partly placed TFJobs (GPUs held while other pods of the job wait)", _partly_placed(obs)),
        ("Steps", _step_lines(obs)),
        ("Night allocation", headline(obs)),
        ("Argo CD Applications", [f"{a.name}: " + ("not rendered offline" if a.offline else f"{a.sync}, {a.health}")
                                  + (f" ({a.message})" if a.message and not a.offline else "")
                                  for a in obs.applications]),
        ("Stand-ins (what cannot run offline)", [f"{what_}: {how}" for what_, how in obs.stand_ins.items()]),
        ("Pods", [f"{len(placed)} placed, {len(obs.pending)} Pending, of {len(obs.pods)}"]),
        ("Notes", obs.notes),
    ]


def _change_lines(obs: Observation) -> list[str]:
    """Per Application: failed first, with Argo CD's and the API server's words; then what each
    sync created, changed, pruned or kept, and the hooks it ran; then how many the change left alone."""
    if obs.change is None:
        return []
    out = []
    for a in sorted(obs.change, key=lambda a: (a.ok, a.name)):
        if not a.ok:
            out.append(f"{a.name}: FAILED ({'retrying' if a.phase == 'Running' else a.phase}): " + "; ".join(
                [f"{obj}: {message}" for obj, message in a.failed] or [a.message]))
        elif a.phase:
            did = [f"{what} {', '.join(objs)}" for what, objs in
                   (("created", a.created), ("changed", a.changed),
                    ("applied server-side (changed or as it was: kubectl does not say)", a.applied), ("pruned", a.pruned),
                                    ("kept what it removed", a.kept), ("ran the hooks", a.hooks))
                   if objs]
            times = f" {a.syncs} times" if a.syncs > 1 else ""
            out.append(f"{a.name}: synced{times}: {'; '.join(did) or 'nothing applied'}")
    untouched = sum(not a.phase for a in obs.change)
    out.append(f"{untouched} of {len(obs.change)} Applications unchanged (no sync)")
    out += [f"rollout {line}" for line in rollouts.summary(obs.rollouts)]
    online = [p for p in obs.replaced if p.startswith("online ")]
    out.append(f"pods replaced: {len(obs.replaced)}, {len(online)} online" + (f" ({', '.join(obs.replaced)})" if obs.replaced else ""))
    if obs.deleted_with:
        out.append(f"deleted with what the sync pruned: {', '.join(obs.deleted_with)}")
    return out


def _step_lines(obs: Observation) -> list[str]:
    out = []
    for st in obs.steps:
        use = {(u.pool, u.resource): u for u in st.use}
        pools = sorted({u.pool for u in st.use})
        load = "; ".join(f"{pool} " + " ".join(
            f"{r} {_pct(use[(pool, r)])}" for r in ("cpu", "memory", "gpu") if use[(pool, r)].allocatable)
            for pool in pools)
        out.append(f"{st.name}: online {st.online_placed}/{st.online_desired} placed; training {st.training_running} "
                   f"running, {st.training_pending} pending, {st.training_suspended} suspended; " + _queue(st) +
                   f"{st.preemptions} preempted, {st.resubmissions} resubmitted; requests/allocatable {load}"
                   + (f" [{'; '.join(st.actions)}]" if st.actions else "")
                   + "".join(f"\n    UNPLACED {u}" for u in st.unplaced_online)
                   + "".join(f"\n    BLOCKED {b}" for b in st.blocked)
                   + "".join(f"\n    {BLOCKED_METRIC} {{{b}}} 1" for b in st.blocked_gauge))
    return out


def _partly_placed(obs: Observation) -> list[str]:
    """Per step, each TFJob some of whose pods run while others wait, with the GPUs they hold.
    Kueue's waitForPodsReady does not free them: v1.7.0 calls a TFJob Running once one Chief or
    Worker pod runs (docs/queue.md). At hourly steps a job seen twice in a row held them an hour."""
    lines = [f"{job} holds {gpus} GPU(s) at step {st.name}" for st in obs.steps for job, gpus in st.partly_placed.items()]
    if lines and obs.hourly:
        lines.append(f"{sum(sum(st.partly_placed.values()) for st in obs.steps) * 60} GPU-minutes, counting each "
                     "hour step as the hour it starts")
    return lines


def _queue(st) -> str:
    """Kueue's side of a step: admitted and waiting jobs, each waiting one with Kueue's reason."""
    if st.queue_admitted is None:
        return ""
    waiting = "".join(f"; {job} waits since {st.waiting_since[job]}: {st.waiting_reason.get(job) or 'queued'}"
                      for job in sorted(st.waiting_since))
    return f"queue {st.queue_admitted} admitted, {st.queue_waiting} waiting{waiting}; "


def headline(obs: Observation) -> list[str]:
    """The how-to's figure from requests: each pool training uses, at night (steps at the lowest
    online load, training running, nothing else happening), with and without the training."""
    if not obs.steps:
        return []
    low = min(st.online_desired for st in obs.steps)
    nights = [st for st in obs.steps if st.online_desired == low and not st.actions and st.training_running]
    out = []
    pools = sorted({u.pool for st in nights for u in st.use if u.requested.get(OFFLINE)})
    for pool in pools:
        parts = []
        for resource in ("gpu", "cpu"):
            uses = [u for st in nights for u in st.use if u.pool == pool and u.resource == resource and u.allocatable]
            if not uses:
                continue
            with_ = sum(sum(u.requested.values()) / u.allocatable for u in uses) / len(uses)
            without = sum((sum(u.requested.values()) - u.requested.get(OFFLINE, 0)) / u.allocatable for u in uses) / len(uses)
            parts.append(f"{resource.upper()} {100 * without:.0f}% without training, {100 * with_:.0f}% with it")
        out.append(f"{pool} pool at night (mean of {len(nights)} step(s), requests / allocatable): " + "; ".join(parts))
    return out


def _pct(use) -> str:
    """``58% (offline 58%)``: all tiers' requests against allocatable, then each tier's share."""
    tiers = ", ".join(f"{tier} {100 * value / use.allocatable:.0f}%" for tier, value in sorted(use.requested.items())
                      if tier in ("online", OFFLINE) and value)
    return f"{100 * sum(use.requested.values()) / use.allocatable:.0f}%" + (f" ({tiers})" if tiers else "")


def to_text(obs: Observation, logs: Path | None = None) -> str:
    out = [f"colocate simulate, scenario {obs.scenario}: {_verdict(obs)} ({obs.seconds:.1f} s)"]
    for title, lines in _sections(obs):
        if lines:
            out += ["", f"{title}:"] + [f"  {line}" for line in lines]
    if logs:
        out += ["", f"Component logs kept in {logs}"]
    # Names, Argo CD's and the API server's messages come from the change under review.
    return "\n".join(escape_lines(out)) + "\n"


def _rows(obs: Observation) -> list:
    return [use for st in obs.steps for use in st.use]


def to_markdown(obs: Observation, logs: Path | None = None) -> str:
    out = [f"### colocate simulate: scenario {code_span(obs.scenario)}", "",
           f"**{markdown(_verdict(obs))}** ({obs.seconds:.1f} s)"]
    sections = _sections(obs)
    if obs.change is not None:  # above the scenario: what merging does comes first in a PR comment
        (title, lines), sections = sections[0], sections[1:]
        out += ["", f"#### {title}", ""] + [f"- {markdown(line)}" for line in lines]
    if obs.hourly and obs.steps:
        out += ["", charts.mermaid(_rows(obs), queue=queue_chart(obs.steps)).rstrip()]
    for title, lines in sections:
        if lines:
            out += ["", f"#### {title}", ""] + [f"- {markdown(line)}" for line in lines]
    if logs:
        out += ["", f"Component logs kept in {code_span(str(logs))}"]
    return "\n".join(out) + "\n"


def to_json(obs: Observation, logs: Path | None = None) -> str:
    data = asdict(obs)
    data.update(ok=obs.ok, verdict=_verdict(obs), logs=str(logs) if logs else None,
                failed_by_preemption=obs.failed_by_preemption, failed_jobs=obs.failed_jobs,
                disrupted_pods=obs.disrupted_pods())
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def to_html(obs: Observation, logs: Path | None = None) -> str:
    """A self-contained page: the day's charts, then the report's sections as tables."""
    tables = [(title, [""], [[line] for line in lines]) for title, lines in _sections(obs) if lines]
    queued = any(st.queue_admitted is not None for st in obs.steps)
    steps = [[st.name, f"{st.online_placed}/{st.online_desired}", str(st.training_running), str(st.training_pending),
              str(st.training_suspended),
              *([f"{st.queue_admitted} admitted, {st.queue_waiting} waiting"] if queued else []),
              str(st.preemptions), str(st.resubmissions), "; ".join(st.actions)]
             for st in obs.steps]
    if steps:
        tables.insert(0, ("Steps", ["step", "online placed", "training running", "pending", "suspended",
                                    *(["queue"] if queued else []), "preempted", "resubmitted", "actions"], steps))
    title = f"colocate simulate, scenario {obs.scenario}: {_verdict(obs)}"
    if logs:
        tables.append(("Logs", [""], [[f"Component logs kept in {logs}"]]))
    if not obs.hourly:   # named steps (night, peak): no hours to draw
        return charts.html([], title, tables)
    return charts.html(_rows(obs), title, tables, queue=queue_chart(obs.steps))


FORMATS = {"text": to_text, "json": to_json, "markdown": to_markdown, "html": to_html}

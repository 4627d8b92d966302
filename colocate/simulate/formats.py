"""Renderers of a simulation's Observation: text for a terminal, JSON for tools, Markdown for a
pull-request comment. One model, three views."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from colocate import quantity
from colocate.model.names import GPU
from colocate.simulate.observe import Observation


#: Why a preempted TFJob fails instead of waiting (docs/simulate.md "Preempted TFJobs fail").
PREEMPTION_FAILS_JOBS = ("training-operator v1.7.0 counts a preempted (terminating, still Running) pod as a failed "
                         "replica and fails the whole TFJob; it does not resume: resubmit it, or pause training "
                         "before a planned peak (`colocate offline pause`); docs/simulate.md")


def _verdict(obs: Observation) -> str:
    if obs.ok:
        waiting = len(obs.pending)
        text = ("every pod placed" if not waiting else
                f"every pod placed except {waiting} {'/'.join(obs.may_wait)} pod(s) the scenario lets wait")
        if obs.failed_by_preemption:
            text += f"; WARNING: {len(obs.failed_by_preemption)} TFJob(s) failed when their pods were preempted"
        return text
    parts = [f"{len(obs.rejected)} object(s) rejected" if obs.rejected else "",
             f"{len(obs.failed_creates)} workload(s) could not create pods" if obs.failed_creates else "",
             f"{len(obs.failing_pending)} pod(s) Pending" if obs.failing_pending else "",
             "" if obs.settled else "the cluster did not settle",
             ", ".join(f"TFJob {n} Failed" for n in obs.failed_jobs)]
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
        ("TFJobs failed by preemption", [f"{name}: {PREEMPTION_FAILS_JOBS}" for name in obs.failed_by_preemption]),
        ("Argo CD Applications", [f"{a.name}: " + ("not rendered offline" if a.offline else f"{a.sync}, {a.health}")
                                  + (f" ({a.message})" if a.message and not a.offline else "")
                                  for a in obs.applications]),
        ("Not rendered offline (represented)", [f"{app}: {what}" for app, what in sorted(obs.stand_ins.items())]),
        ("Pods", [f"{len(placed)} placed, {len(obs.pending)} Pending, of {len(obs.pods)}"]),
        ("Notes", obs.notes),
    ]


def to_text(obs: Observation, logs: Path | None = None) -> str:
    out = [f"colocate simulate, scenario {obs.scenario}: {_verdict(obs)} ({obs.seconds:.1f} s)"]
    for title, lines in _sections(obs):
        if lines:
            out += ["", f"{title}:"] + [f"  {line}" for line in lines]
    if logs:
        out += ["", f"Component logs kept in {logs}"]
    return "\n".join(out) + "\n"


def to_markdown(obs: Observation, logs: Path | None = None) -> str:
    out = [f"### colocate simulate: scenario `{obs.scenario}`", "", f"**{_verdict(obs)}** ({obs.seconds:.1f} s)"]
    for title, lines in _sections(obs):
        if lines:
            out += ["", f"#### {title}", ""] + [f"- {line}" for line in lines]
    if logs:
        out += ["", f"Component logs kept in `{logs}`"]
    return "\n".join(out) + "\n"


def to_json(obs: Observation, logs: Path | None = None) -> str:
    data = asdict(obs)
    data.update(ok=obs.ok, verdict=_verdict(obs), logs=str(logs) if logs else None,
                failed_by_preemption=obs.failed_by_preemption, failed_jobs=obs.failed_jobs)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


FORMATS = {"text": to_text, "json": to_json, "markdown": to_markdown}

"""Findings after the rules: kubeconform's as findings, field lines, suppressions, order."""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from colocate.checker import kubeconform, manifests
from colocate.model.names import IGNORE_ANNOTATION
from colocate.errors import InputError
from colocate.checker.manifests import Doc
from colocate.checker.evaluate import SUPPRESSION_RULE_ID
from colocate.checker.model import Finding, INPUT_RULE_ID, SCHEMA_RULE, SCHEMA_RULE_ID


_KUBECONFORM_PREFIX = re.compile(r"problem validating schema\. Check JSON formatting: jsonschema validation failed "
                                 r"with '[^']*' - ")


_PROPERTY_LIST = re.compile(r"'[^',]*'(?:, '[^',]*')+")


def schema_message(res: dict, doc: Doc | None, kubernetes_version: str) -> str:
    """kubeconform's message without its cache paths, and a kind whose apiVersion the Kubernetes
    version does not serve said so, with the versions it does serve."""
    message = _KUBECONFORM_PREFIX.sub("", str(res.get("msg", "")))
    message = re.sub(r"\s+- at ", "; at ", message)
    # kubeconform lists unknown properties in Go map order, which changes from run to run.
    message = _PROPERTY_LIST.sub(lambda m: ", ".join(sorted(m.group(0).split(", "))), message)
    kind = str(res.get("kind", ""))
    if message.startswith("could not find schema for") and doc is not None and kind:
        served = kubeconform.served_versions(kind, kubernetes_version)
        api = doc.obj.get("apiVersion", "")
        group = doc.group
        shown = [f"{group}/{v.split('-')[-1]}" if group and v.split("-")[0] == group.split(".")[0] else v
                 for v in served]
        if shown and api not in shown:
            message = (f"{api} is not served by Kubernetes {kubernetes_version} (removed, or never served): it "
                       f"serves {kind} as {', '.join(shown)}")
    return message


def kubeconform_findings(result: kubeconform.Result, docs: list[Doc], kubernetes_version: str = "") -> list[Finding]:
    """kubeconform reports file, kind and name; find the namespace and line in our index."""
    if not result.resources:
        return []
    resolved = {file: Path(file).resolve() for file in dict.fromkeys(d.file for d in docs)}
    by_key = {(resolved[d.file], d.kind, d.name): d for d in docs}
    findings = []
    for res in result.resources:
        doc = by_key.get((Path(res.get("filename", "")).resolve(), res.get("kind", ""), res.get("name", "")))
        status = res.get("status", "")
        reason = {"statusSkipped": "skipped: no schema was consulted"}.get(
            status, schema_message(res, doc, kubernetes_version) or status)
        findings.append(Finding(
            SCHEMA_RULE_ID, "error", res.get("filename", ""), doc.line if doc else 0, res.get("kind", ""),
            doc.namespace if doc else "", res.get("name", ""), "",
            f"kubeconform ({status.removeprefix('status').lower()}): {reason}", SCHEMA_RULE.fix))
    return findings


def with_field_lines(findings: list[Finding], known: dict[tuple[str, int, str], int] | None = None) -> list[Finding]:
    """Each finding with the line of its field, reading again only the files that have findings
    whose line ``known`` (file, object line, field -> line; the cache's) does not hold. Lines
    found are added to ``known``."""
    wanted: dict[str, list[int]] = {}
    out = list(findings)
    for i, f in enumerate(findings):
        if f.field and f.line:
            line = known.get((f.file, f.line, f.field)) if known is not None else None
            if line is None:
                wanted.setdefault(f.file, []).append(i)
            else:
                out[i] = _at_line(f, line)
    # The collector paused across files, not per document: each re-enabling scanned the nodes
    # just composed (0.3 s of 1,450 documents); they have no cycles and go with each file.
    with manifests.collector_paused():
        _field_lines_into(out, findings, wanted, known)
    return out


def _at_line(finding: Finding, line: int) -> Finding:
    """replace(finding, field_line=line), without dataclasses.replace's cost (thousands per check)."""
    made = object.__new__(Finding)
    made.__dict__.update(finding.__dict__, field_line=line)
    return made


def _field_lines_into(out: list[Finding], findings: list[Finding], wanted: dict[str, list[int]],
                      known: dict[tuple[str, int, str], int] | None) -> None:
    for file, indexes in wanted.items():
        lines = manifests.field_lines(Path(file), [(findings[i].line, findings[i].field) for i in indexes])
        for i, line in zip(indexes, lines):
            out[i] = replace(findings[i], field_line=line)
            if known is not None:
                known[(file, findings[i].line, findings[i].field)] = line


def suppressions(doc: Doc) -> list[tuple[str, str]]:
    """(rule id, reason) of an object's ``colocate.io/ignore`` annotation: entries separated by
    ``;`` or new lines, each ``RULE-ID: reason`` (the reason may be empty: rule COL010 says so)."""
    annotations = doc.metadata.get("annotations")
    text = annotations.get(IGNORE_ANNOTATION) if isinstance(annotations, dict) else None
    out = []
    for entry in re.split(r"[;\n]", str(text or "")):
        rule, _, reason = entry.strip().partition(":")
        if rule.strip():
            out.append((rule.strip(), reason.strip()))
    return out


def suppress(findings: list[Finding], docs: list[Doc], rules: Iterable = ()) -> tuple[list[Finding], list[tuple[Finding, str]]]:
    """Split findings into kept and suppressed (with the reason). Only entries with a reason count,
    and never for a rule of ``rules`` that is not suppressible (rule COL010 reports such an entry)."""
    never = {SUPPRESSION_RULE_ID, SCHEMA_RULE_ID, INPUT_RULE_ID} | {r.id for r in rules if not r.suppressible}
    by_doc = {}
    for d in docs:
        annotations = d.metadata.get("annotations")
        # Most objects have no such annotation: no split, twice, of each of 10,000 objects.
        if isinstance(annotations, dict) and annotations.get(IGNORE_ANNOTATION) and (entries := suppressions(d)):
            by_doc[(d.file, d.line)] = dict((r, why) for r, why in entries if why)
    kept, silenced = [], []
    for f in findings:
        reason = by_doc.get((f.file, f.line), {}).get(f.rule)
        if reason and f.rule not in never:
            silenced.append((f, reason))
        else:
            kept.append(f)
    return kept, silenced


def skipped_findings(skipped: Iterable[manifests.Skipped]) -> list[Finding]:
    return [Finding(INPUT_RULE_ID, "warning", s.path, 0, "", "", "", "", s.reason, s.hint) for s in skipped]


def finding_order(f: Finding) -> tuple:
    """Findings by file, line, field line, rule and field; the rest only breaks ties, so the order
    is the same whether the findings were computed in one pass or taken from the cache."""
    return (f.file, f.line, f.field_line, f.rule, f.field, f.message, f.severity, f.kind, f.namespace, f.name, f.fix)


def unusable_findings(unusable: list[tuple[Path, InputError]]) -> list[Finding]:
    """One error per file in a checked folder that is not manifests (Argo CD would fail to sync it)."""
    out = []
    for path, exc in unusable:
        line = int(exc.where) if exc.where.isdigit() else 0
        out.append(Finding(INPUT_RULE_ID, "error", str(path), line, "", "", "", "", exc.reason,
                           "make it a Kubernetes manifest, move it out of the folder, or leave it out with --exclude"))
    return out

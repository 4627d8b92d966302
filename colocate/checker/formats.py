"""Render a CheckResult: text for people (grouped by file), versioned JSON for machines, SARIF
2.1.0 for code scanning. One result model, three renderers."""
from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Callable

from colocate.base.text import escape
from colocate.checker import INPUT_RULE, SCHEMA_RULE, CheckResult, Finding, Rule

JSON_VERSION = 1
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_COLOURS = {"error": "\033[31m", "warning": "\033[33m"}
_RESET, _BOLD = "\033[0m", "\033[1m"


def use_colour(stream=sys.stdout) -> bool:
    """Colour on a terminal, unless NO_COLOR is set (https://no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _where(f: Finding) -> str:
    """``field (line N): `` with the field's line where known; "" for a finding on no field."""
    return f"{f.field}{f' (line {f.field_line})' if f.field_line else ''}: " if f.field else ""


def _line(f: Finding, colour: bool) -> str:
    """One finding on one line; every part that comes from the input is escaped."""
    where = _where(f)
    fix = f" (fix: {f.fix})" if f.fix else ""
    severity = f.severity.upper()
    if colour:
        severity = f"{_COLOURS.get(f.severity, '')}{severity}{_RESET}"
    location = f"{f.file}:{f.line}" if f.line else f.file
    ref = f" {f.ref}" if f.kind else ""
    return f"{severity} {escape(f'{f.rule} {location}{ref}: {where}{f.message}{fix}')}"


def summary(result: CheckResult) -> str:
    k = result.kubeconform
    warnings = [f for f in result.findings if f.severity != "error"]
    suppressed = [f for f, _ in result.suppressed]
    suppressed_text = f"; {len(suppressed)} suppressed{_by_rule(suppressed)}" if suppressed else ""
    return (f"checked {result.objects} objects with {len(result.rules)} rules; kubeconform: "
            f"{k.valid} valid, {k.invalid} invalid, {k.errors} errors, {k.skipped} skipped; "
            f"{len(result.errors)} errors{_by_rule(result.errors)}, {len(warnings)} warnings{_by_rule(warnings)}"
            f"{suppressed_text}")


def _by_rule(findings: list[Finding]) -> str:
    counts = Counter(f.rule for f in findings)
    return f" ({', '.join(f'{r} {n}' for r, n in sorted(counts.items()))})" if counts else ""


def to_text(result: CheckResult, colour: bool = False) -> str:
    """Findings grouped by file (a header per file), each ``SEVERITY RULE FILE:LINE KIND/NS/NAME:
    field: message (fix: ...)``; the suppressed ones with their reasons; a summary with counts by
    severity and rule."""
    lines: list[str] = []
    current = None
    for f in result.findings:
        if f.file != current:
            current = f.file
            header = escape(f"{current}")
            lines.append(f"{_BOLD}{header}{_RESET}" if colour else header)
        lines.append("  " + _line(f, colour))
    if result.suppressed:
        lines.append(f"suppressed ({len(result.suppressed)}):")
        lines += ["  " + escape(f"{f.rule} {f.file}:{f.line} {f.ref}: {_where(f)}{reason}")
                  for f, reason in result.suppressed]
    lines.append(summary(result))
    return "\n".join(lines) + "\n"


def to_json(result: CheckResult) -> str:
    k = result.kubeconform
    doc = {
        "version": JSON_VERSION,
        "summary": {"objects": result.objects, "rules": len(result.rules), "errors": len(result.errors),
                    "warnings": len(result.findings) - len(result.errors), "suppressed": len(result.suppressed)},
        "kubeconform": {"valid": k.valid, "invalid": k.invalid, "errors": k.errors, "skipped": k.skipped},
        "findings": [dict(f.__dict__) for f in result.findings],
        "suppressed": [{**f.__dict__, "reason": reason} for f, reason in result.suppressed],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _artifact(file: str, root: Path) -> dict:
    """Relative to the repository root, which code scanning maps onto the checkout (from any
    working folder); a file outside it by its absolute URI."""
    path = Path(file).resolve()
    try:
        return {"uri": path.relative_to(root).as_posix(), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        return {"uri": path.as_uri()}


def _descriptor(r: Rule) -> dict:
    return {
        "id": r.id, "name": r.name,
        "shortDescription": {"text": r.message},
        "fullDescription": {"text": r.rationale},
        "help": {"text": f"{r.rationale}\nFix: {r.fix}",
                 "markdown": f"{r.rationale}\n\n**Fix:** {r.fix}\n\nMore: `colocate check --explain {r.id}`"},
        "defaultConfiguration": {"level": r.severity},
        "properties": {"category": r.category, "tags": ["kubernetes", r.category]},
    }


def _sarif_result(f: Finding, index: dict[str, int], root: Path, reason: str | None) -> dict:
    artifact = _artifact(f.file, root)
    where: dict = {"artifactLocation": artifact}
    if f.field_line or f.line:
        where["region"] = {"startLine": f.field_line or f.line}
    out = {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": f.severity,
        "message": {"text": f"{f.ref}: {f.field + ': ' if f.field else ''}{f.message}"
                            + (f" (fix: {f.fix})" if f.fix else "")},
        "locations": [{"physicalLocation": where, "logicalLocations": [
            {"fullyQualifiedName": f.ref + (f".{f.field}" if f.field else ""), "kind": "member" if f.field else "object"}]}],
        # One alert per rule, object and field, however far an edit above it moves the lines.
        "partialFingerprints": {"colocateFinding/v1": hashlib.sha256(
            "\0".join((f.rule, artifact["uri"], f.ref, f.field)).encode()).hexdigest()},
    }
    if f.line and f.field_line and f.field_line != f.line:
        out["relatedLocations"] = [{"id": 1, "message": {"text": f"the object {f.ref}"}, "physicalLocation": {
            "artifactLocation": artifact, "region": {"startLine": f.line}}}]
    if reason is not None:
        out["suppressions"] = [{"kind": "inSource", "status": "accepted", "justification": reason}]
    return out


def to_sarif(result: CheckResult, root: Path | None = None) -> str:
    """SARIF 2.1.0: one run; every rule described (code scanning then closes an alert whose rule
    ran and found nothing), with rationale and fix as help; each result at its field's line, the
    object's as a related location; suppressed findings with their justification."""
    from colocate import __version__
    from colocate.base.data_files import repository

    root = (root or repository()).resolve()
    rules = [SCHEMA_RULE, INPUT_RULE, *sorted(result.rules, key=lambda r: r.id)]
    index = {r.id: i for i, r in enumerate(rules)}
    sarif = {
        "$schema": SARIF_SCHEMA, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "colocate", "version": __version__, "semanticVersion": __version__,
                                "rules": [_descriptor(r) for r in rules]}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri() + "/"}},
            "results": [_sarif_result(f, index, root, None) for f in result.findings]
                       + [_sarif_result(f, index, root, reason) for f, reason in result.suppressed],
        }],
    }
    return json.dumps(sarif, indent=2, sort_keys=True) + "\n"


FORMATS: dict[str, Callable[[CheckResult], str]] = {"text": to_text, "json": to_json, "sarif": to_sarif}

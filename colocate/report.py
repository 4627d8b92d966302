"""Render a CheckResult: text for people (grouped by file), versioned JSON for machines, SARIF
2.1.0 for code scanning. One result model, three renderers."""
from __future__ import annotations

import json
import os
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Callable

from colocate.checker import CheckResult, Finding

JSON_VERSION = 1
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_COLOURS = {"error": "\033[31m", "warning": "\033[33m"}
_RESET, _BOLD = "\033[0m", "\033[1m"


def use_colour(stream=sys.stdout) -> bool:
    """Colour on a terminal, unless NO_COLOR is set (https://no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _line(f: Finding, colour: bool) -> str:
    where = f"{f.field}{f' (line {f.field_line})' if f.field_line else ''}: " if f.field else ""
    fix = f" (fix: {f.fix})" if f.fix else ""
    severity = f.severity.upper()
    if colour:
        severity = f"{_COLOURS.get(f.severity, '')}{severity}{_RESET}"
    location = f"{f.file}:{f.line}" if f.line else f.file
    ref = f" {f.ref}" if f.kind else ""
    return f"{severity} {f.rule} {location}{ref}: {where}{f.message}{fix}"


def summary(result: CheckResult) -> str:
    k = result.kubeconform
    warnings = len(result.findings) - len(result.errors)
    by_rule = Counter(f.rule for f in result.findings)
    rules = f" ({', '.join(f'{r} {n}' for r, n in sorted(by_rule.items()))})" if by_rule else ""
    suppressed = f"; {len(result.suppressed)} suppressed" if result.suppressed else ""
    return (f"checked {result.objects} objects with {len(result.rules)} rules; kubeconform: "
            f"{k.valid} valid, {k.invalid} invalid, {k.errors} errors, {k.skipped} skipped; "
            f"{len(result.errors)} errors, {warnings} warnings{rules}{suppressed}")


def to_text(result: CheckResult, colour: bool = False) -> str:
    """Findings grouped by file (a header per file), each ``SEVERITY RULE FILE:LINE KIND/NS/NAME:
    field: message (fix: ...)``; the suppressed ones with their reasons; a summary with counts by
    severity and rule."""
    lines: list[str] = []
    current = None
    for f in result.findings:
        if f.file != current:
            current = f.file
            header = f"{current}"
            lines.append(f"{_BOLD}{header}{_RESET}" if colour else header)
        lines.append("  " + _line(f, colour))
    if result.suppressed:
        lines.append(f"suppressed ({len(result.suppressed)}):")
        lines += [f"  {f.rule} {f.file}:{f.line} {f.ref}: {reason}" for f, reason in result.suppressed]
    lines.append(summary(result))
    return "\n".join(lines) + "\n"


def to_json(result: CheckResult) -> str:
    k = result.kubeconform
    doc = {
        "version": JSON_VERSION,
        "summary": {"objects": result.objects, "rules": len(result.rules), "errors": len(result.errors),
                    "warnings": len(result.findings) - len(result.errors), "suppressed": len(result.suppressed)},
        "kubeconform": {"valid": k.valid, "invalid": k.invalid, "errors": k.errors, "skipped": k.skipped},
        "findings": [asdict(f) for f in result.findings],
        "suppressed": [{**asdict(f), "reason": reason} for f, reason in result.suppressed],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _uri(path: str) -> str:
    """Repository-relative when under the working directory (what code scanning expects)."""
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return p.as_posix()


def to_sarif(result: CheckResult) -> str:
    """SARIF 2.1.0: one run, the rules with their rationale and fix as help, one result per
    finding at its file and the object's first line; suppressed findings carry a suppression."""
    from colocate import __version__

    rules = sorted(result.rules, key=lambda r: r.id)
    index = {r.id: i for i, r in enumerate(rules)}
    descriptors = [{
        "id": r.id, "name": r.name,
        "shortDescription": {"text": r.message},
        "fullDescription": {"text": r.rationale},
        "help": {"text": f"{r.rationale}\nFix: {r.fix}"},
        "defaultConfiguration": {"level": r.severity},
        "properties": {"category": r.category},
    } for r in rules]

    def result_of(f: Finding, reason: str | None = None) -> dict:
        out = {
            "ruleId": f.rule,
            "level": f.severity if f.severity in ("error", "warning") else "note",
            "message": {"text": f"{f.ref}: {f.field + ': ' if f.field else ''}{f.message}"
                                + (f" (fix: {f.fix})" if f.fix else "")},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(f.file)},
                                                "region": {"startLine": max(f.line, 1)}}}],
        }
        if f.rule in index:
            out["ruleIndex"] = index[f.rule]
        if reason is not None:
            out["suppressions"] = [{"kind": "inSource", "justification": reason}]
        return out

    sarif = {
        "$schema": SARIF_SCHEMA, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "colocate", "version": __version__,
                                "informationUri": "https://git.example.com/platform/colocate",
                                "rules": descriptors}},
            "results": [result_of(f) for f in result.findings] + [result_of(f, r) for f, r in result.suppressed],
        }],
    }
    return json.dumps(sarif, indent=2, sort_keys=True) + "\n"


FORMATS: dict[str, Callable[[CheckResult], str]] = {"text": to_text, "json": to_json, "sarif": to_sarif}

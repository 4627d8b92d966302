"""Render a CheckResult: one line per finding for humans, versioned JSON for machines."""
from __future__ import annotations

import json
from dataclasses import asdict

from colocate.checker import CheckResult

JSON_VERSION = 1


def to_text(result: CheckResult) -> str:
    """``SEVERITY RULE-ID FILE KIND/NAMESPACE/NAME: field: message (fix: ...)``, then a summary."""
    lines = []
    for f in result.findings:
        where = f"{f.field}: " if f.field else ""
        fix = f" (fix: {f.fix})" if f.fix else ""
        lines.append(f"{f.severity.upper()} {f.rule} {f.file} {f.ref}: {where}{f.message}{fix}")
    k = result.kubeconform
    warnings = len(result.findings) - len(result.errors)
    lines.append(f"checked {result.objects} objects with {len(result.rules)} rules; kubeconform: "
                 f"{k.valid} valid, {k.invalid} invalid, {k.errors} errors, {k.skipped} skipped; "
                 f"{len(result.errors)} errors, {warnings} warnings")
    return "\n".join(lines) + "\n"


def to_json(result: CheckResult) -> str:
    k = result.kubeconform
    doc = {
        "version": JSON_VERSION,
        "summary": {"objects": result.objects, "rules": len(result.rules), "errors": len(result.errors),
                    "warnings": len(result.findings) - len(result.errors)},
        "kubeconform": {"valid": k.valid, "invalid": k.invalid, "errors": k.errors, "skipped": k.skipped},
        "findings": [asdict(f) for f in result.findings],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"

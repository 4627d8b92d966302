"""``colocate rules`` and ``check --explain``: the rule files, described."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from colocate.cli.common import EXIT_OK, root
from colocate.errors import ColocateError


def add(command) -> None:
    """The command's arguments, beside its handler."""
    p = command("rules", help="list every policy rule")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                   help="markdown: the table of docs/rules.md")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from colocate import checker

    rules = checker.described_rules(Path(args.config) if args.config else None)
    if args.format == "json":
        print(json.dumps([{"id": r.id, "name": r.name, "severity": r.severity, "category": r.category,
                           "message": r.message, "rationale": r.rationale, "fix": r.fix,
                           "admission": bool(r.admission), "suppressible": r.suppressible} for r in rules], indent=2))
        return EXIT_OK
    if args.format == "markdown":
        sys.stdout.write(rules_markdown(rules))
        return EXIT_OK
    # admission: enforced by a generated ValidatingAdmissionPolicy too (docs/admission.md);
    # never-ignored: no colocate.io/ignore entry silences it.
    for rule in rules:
        mark = "admission" if rule.admission else "check"
        ignore = "ignorable" if rule.suppressible else "never-ignored"
        print(f"{rule.id:7} {rule.severity:8} {mark:9} {ignore:13} {rule.name:40} {rule.rationale}")
    return EXIT_OK

def rules_markdown(rules) -> str:
    """docs/rules.md: every rule's id, severity, category and what it asks, from the rule files."""
    def cell(text: str) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = ["# Policy rules", "",
             "Generated from `policies/rules/*.yaml` with the repository's `colocate.yaml` by",
             "`colocate rules --format markdown > docs/rules.md`; `tests/test_rules_doc.py` fails when it is",
             "stale. `colocate check --explain ID` prints one rule's rationale, with its upstream sources,",
             "and its fix; each rule's failing and passing cases are the `examples` of its rule file and the",
             "files in `tests/policies/fixtures/<ID>/`.",
             "Rules marked **admission** are also enforced by the API server: `admission.policies: true` in",
             "`colocate.yaml` generates a ValidatingAdmissionPolicy for each (docs/admission.md).",
             "A rule that is not **suppressible** keeps one of the platform's promises (the tiers and their",
             "PriorityClasses, tier and GPU isolation, the queue): no `colocate.io/ignore` entry silences it",
             "(docs/commands.md, \"Suppressing a finding\").", "",
             "| id | severity | category | enforced | suppressible | asks |", "|---|---|---|---|---|---|"]
    for rule in sorted(rules, key=lambda r: r.id):
        where = "check, **admission**" if rule.admission else "check"
        ignore = "yes" if rule.suppressible else "no"
        lines.append(f"| {rule.id} | {rule.severity} | {rule.category} | {where} | {ignore} | {cell(rule.message)} |")
    return "\n".join(lines) + "\n"

def explain(rule_id: str, config: Path | None) -> int:
    from colocate import checker

    rules = {r.id: r for r in (checker.SCHEMA_RULE, checker.INPUT_RULE, *checker.described_rules(config))}
    rule = rules.get(rule_id.upper())
    if rule is None:
        raise ColocateError(f"--explain {rule_id!r}: no such rule; `colocate rules` lists them")
    fixtures = [str(p.relative_to(root())) for p in sorted((root() / "tests" / "policies" / "fixtures" / rule.id).glob("*.yaml"))]
    if rule.file:  # the rule file's own cases, named as its tests name them
        from colocate.rules.files import rule_examples

        named = [f"examples.{verdict}[{i}]" for verdict, texts in rule_examples(rule).items() for i in range(len(texts))]
        if named:
            fixtures.append(f"{os.path.relpath(rule.file, root())} " + ", ".join(named))
    print(f"{rule.id} {rule.name} ({rule.severity}, {rule.category})\n\n{rule.rationale}\n\n"
          f"Checks: {rule.message}\nFix: {rule.fix}")
    if rule.admission:
        from colocate.rules.admission import policy_name

        print(f"Admission: also enforced by the API server, ValidatingAdmissionPolicy "
              f"{policy_name(rule)}, when colocate.yaml sets admission.policies: true"
              + (f"; differs from check: {' '.join(rule.admission['differs'].split())}" if rule.admission.get("differs")
                 else "") + " (docs/admission.md)")
    print(f"Suppressible: {_suppressible(rule)}")
    if fixtures:
        print("Examples: " + ", ".join(fixtures))
    return EXIT_OK

def _suppressible(rule) -> str:
    if rule.suppressible:
        return 'yes, with a reason: colocate.io/ignore: "ID: reason" on the object (docs/commands.md)'
    return "no: it keeps one of the platform's promises, so a colocate.io/ignore entry silences nothing (COL010)"

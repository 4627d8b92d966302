"""Running rules over an index: JSON Schema rules and Python checks, each into findings."""
from __future__ import annotations

import re
import time
from typing import Any, Iterable, Iterator

from colocate.errors import ColocateError
from colocate.manifests import Doc
from colocate.checker.model import Context, Finding, Index, Rule, Timings, Violation
from colocate.rule_files import fill as _fill
from colocate.checker.reads import rule_reads, viewed_index
from colocate.checker.rules import _check_function, judges_alone


#: The rule that reports a suppression without a reason; it cannot itself be suppressed.
SUPPRESSION_RULE_ID = "COL010"

_REQUIRED = re.compile(r"^'([^']+)' is a required property")


def _schema_findings(rule: Rule, ctx: Context, index: Index) -> Iterator[Violation]:
    validator = None  # made for the first target: most rules judge a few kinds (0.3 ms each)
    if rule.target == "PodSpec":
        targets: Iterable[tuple[Doc, str, Any]] = ((p.doc, p.path, p.spec) for p in index.pods(rule.scope))
    else:
        targets = ((d, "", d.obj) for d in index.docs if not rule.kinds or d.kind in rule.kinds)
    for doc, base, value in targets:
        if validator is None:
            # Imported here, for the first object the rule judges: a check answered from the
            # cache, or one that judges afresh only objects no schema rule targets, never needs
            # it (0.06 s to import).
            import jsonschema

            validator = jsonschema.Draft202012Validator(_fill(rule.schema, ctx.values))
        for error in validator.iter_errors(value):
            parts = [base] if base else []
            parts += [f"[{p}]" if isinstance(p, int) else str(p) for p in error.absolute_path]
            missing = _REQUIRED.match(error.message)
            if missing:
                parts.append(missing.group(1))
            yield Violation(doc, ".".join(parts).replace(".[", "["))


def _judge(rule: Rule, index: Index, values: dict[str, str]) -> list[Finding]:
    if rule.schema is not None:
        violations: Iterable[Violation] = _schema_findings(rule, index.ctx, index)
    else:
        violations = _check_function(rule.check)(index, rule)
    return [Finding(rule.id, rule.severity, v.doc.file, v.doc.line, v.doc.kind, v.doc.namespace, v.doc.name, v.field,
                    _fill(rule.message, values) + (f" ({v.detail})" if v.detail else ""), _fill(rule.fix, values))
            for v in violations]


def _unjudged(rule: Rule, index: Index, values: dict[str, str], exc: Exception) -> list[Finding]:
    """A rule raised: the objects it raises on alone have a shape the rule cannot read (a null
    container, a string for a list: lenient schemas let some through). Each is an error naming the
    object, so the check fails closed, and the rule judges the rest. A failure that no single
    object explains is our bug (exit 3)."""
    found, unreadable = [], set()
    for doc in index.docs:
        try:
            _judge(rule, Index([doc], index.ctx), values)
        except ColocateError:
            raise
        except Exception as own:
            unreadable.add(id(doc))
            found.append(Finding(rule.id, "error", doc.file, doc.line, doc.kind, doc.namespace, doc.name, "",
                                 f"the rule cannot judge this object ({type(own).__name__}: {own}): a field has "
                                 "a shape the rule does not expect", "give every field the shape the Kubernetes API "
                                 "documents for it (no null list items, lists where lists belong)"))
    if not found:
        raise exc
    try:
        return found + _judge(rule, Index([d for d in index.docs if id(d) not in unreadable], index.ctx), values)
    except ColocateError:
        raise
    except Exception:
        raise exc from None


def evaluate(rules: Iterable[Rule], index: Index, timings: Timings | None = None,
             viewed: dict[int, Index] | None = None) -> list[Finding]:
    findings = []
    values = index.ctx.values
    # One index per declaration, shared by the rules that make it; ``viewed`` may bring them made.
    viewed = {} if viewed is None else viewed
    for rule in rules:
        start = time.perf_counter()
        scope = index
        if not judges_alone(rule):
            declared = rule_reads(rule)
            if id(declared) not in viewed:
                viewed[id(declared)] = viewed_index(declared, index.docs, index.ctx)
            scope = viewed[id(declared)]
        try:
            findings.extend(_judge(rule, scope, values))
        except ColocateError:
            raise
        except Exception as exc:
            findings.extend(_unjudged(rule, scope, values, exc))
        if timings is not None:
            timings.append((rule.id, time.perf_counter() - start))
    return findings

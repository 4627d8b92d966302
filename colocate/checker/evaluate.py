"""Running rules over an index: JSON Schema rules and Python checks, each into findings."""
from __future__ import annotations

import re
import time
from typing import Any, Iterable, Iterator

from colocate.errors import ColocateError, InputError
from colocate.checker.manifests import Doc
from colocate.checker import schema_fast
from colocate.checker.model import Context, Finding, Index, Rule, Timings, UndeclaredKind, Violation
from colocate.rules.files import fill as _fill
from colocate.checker.reads import EVERYTHING, rule_reads, viewed_index
from colocate.checker.rule_loader import check_function


#: The rule that reports a suppression without a reason; it cannot itself be suppressed.
SUPPRESSION_RULE_ID = "COL010"

_REQUIRED = re.compile(r"^'([^']+)' is a required property")


def _schema_findings(rule: Rule, ctx: Context, index: Index) -> Iterator[Violation]:
    schema, validator = None, None  # made for the first target: most rules judge a few kinds (0.3 ms each)
    if rule.target == "PodSpec":
        targets: Iterable[tuple[Doc, str, Any]] = ((p.doc, p.path, p.spec) for p in index.pods(rule.scope))
    else:
        targets = ((d, "", d.obj) for d in index.docs if not rule.kinds or d.kind in rule.kinds)
    for doc, base, value in targets:
        if schema is None:
            schema = _fill(rule.schema, ctx.values)
            quick = schema_fast.compiled(schema)
        if schema_fast.holds(quick, value):
            continue  # no error: jsonschema would find none either
        if validator is None:
            # Imported here, for the first object that may fail the rule: a check answered from
            # the cache, or one whose objects all pass, never needs it (0.06 s to import).
            import jsonschema

            validator = jsonschema.Draft202012Validator(schema)
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
        violations = check_function(rule.check)(index, rule)
    return [Finding(rule.id, rule.severity, v.doc.file, v.doc.line, v.doc.kind, v.doc.namespace, v.doc.name, v.field,
                    _fill(rule.message, values) + (f" ({v.detail})" if v.detail else ""), _fill(rule.fix, values))
            for v in violations]


def _raised(rule: Rule, docs: list[Doc], index: Index, values: dict[str, str]) -> Exception | None:
    """What the rule raises on ``docs`` (None when it judges them)."""
    try:
        _judge(rule, Index(docs, index.ctx, index.declared), values)
    except (ColocateError, UndeclaredKind):
        raise
    except Exception as exc:
        return exc
    return None


def _culprit(rule: Rule, base: list[Doc], docs: list[Doc], index: Index, values: dict[str, str]) -> Doc:
    """One of ``docs`` without which the rule judges ``base`` with the rest, by halving: a few runs
    of the rule, not one per object. Invariant: the rule judges ``base + keep`` and raises on
    ``base + keep + candidates``."""
    keep, candidates = [], list(docs)
    while len(candidates) > 1:
        first, second = candidates[:len(candidates) // 2], candidates[len(candidates) // 2:]
        if _raised(rule, base + keep + second, index, values) is None:
            keep, candidates = keep + second, first
        elif _raised(rule, base + keep + first, index, values) is None:
            keep, candidates = keep + first, second
        else:  # the rule raises without first: an object of second suffices
            candidates = second
    return candidates[0]


def _cannot_judge(rule: Rule, doc: Doc, exc: Exception, partner: Doc | None = None) -> Finding:
    where = "this object" if partner is None else \
        f"this object together with {partner.kind}/{partner.name} ({partner.file}:{partner.line})"
    return Finding(rule.id, "error", doc.file, doc.line, doc.kind, doc.namespace, doc.name, "",
                   f"the rule cannot judge {where} ({type(exc).__name__}: {exc}): a field "
                   + ("has" if partner is None else "of one of them has") + " a shape the rule does not expect",
                   "give every field the shape the Kubernetes API documents for it (no null list items, lists "
                   "where lists belong)")


def _unjudged(rule: Rule, index: Index, values: dict[str, str], exc: Exception) -> list[Finding]:
    """A rule raised: the objects it raises on have a shape the rule cannot read (a null container,
    a string for a list: lenient schemas let some through). Each is an error naming the object, so
    the check fails closed, and the rule judges the rest. An object the rule reads well alone may
    break it only with another (a LimitRange whose max is a string, met by the pods it bounds):
    such an object is found by halving and named with the other. A failure that no object
    explains is our bug (exit 3)."""
    found, rest = [], []
    for doc in index.docs:
        own = _raised(rule, [doc], index, values)
        if own is None:
            rest.append(doc)
        else:
            found.append(_cannot_judge(rule, doc, own))
    if _raised(rule, [], index, values) is not None:
        raise exc  # it raises on nothing: no object is to blame
    while rest:
        joined = _raised(rule, rest, index, values)
        if joined is None:
            return found + _judge(rule, Index(rest, index.ctx, index.declared), values)
        culprit = _culprit(rule, [], rest, index, values)
        # The rule judged the culprit alone: another object it meets there breaks it too.
        partner = _culprit(rule, [culprit], [d for d in rest if d is not culprit], index, values)
        found.append(_cannot_judge(rule, culprit, joined, partner))
        rest = [d for d in rest if d is not culprit]
    if not found:
        raise exc
    return found


def _judged(rule: Rule, scope: Index, values: dict[str, str]) -> list[Finding]:
    """The rule's findings; where it raises on an object's shape, that object is named (_unjudged)."""
    try:
        return _judge(rule, scope, values)
    except (ColocateError, UndeclaredKind):
        raise
    except Exception as exc:
        return _unjudged(rule, scope, values, exc)


def _undeclared(rule: Rule, kind: str) -> InputError:
    """A check that asks for a kind its file does not name would judge none of it, silently."""
    return InputError(rule.file or rule.id, "$.kinds", f"check {rule.check} reads {kind} objects, which the rule "
                      f"file does not name: add {kind} to kinds (the engine hands a check only what its file names)")


def evaluate(rules: Iterable[Rule], index: Index, timings: Timings | None = None,
             viewed: dict[int, Index] | None = None) -> list[Finding]:
    findings = []
    values = index.ctx.values
    # One index per declaration, shared by the rules that make it; ``viewed`` may bring them made.
    viewed = {} if viewed is None else viewed
    for rule in rules:
        start = time.perf_counter()
        scope = index
        if rule.check is not None:
            # A check is handed only what its rule file names (and its @reads adds).
            declared = rule_reads(rule)
            if id(declared) not in viewed:
                viewed[id(declared)] = index if declared is EVERYTHING else \
                    viewed_index(declared, index.docs, index.ctx)
            scope = viewed[id(declared)]
        try:
            findings.extend(_judged(rule, scope, values))
        except UndeclaredKind as exc:
            raise _undeclared(rule, exc.kind) from None
        if timings is not None:
            timings.append((rule.id, time.perf_counter() - start))
    return findings

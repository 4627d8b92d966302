"""Checks on colocate's own annotations."""
from __future__ import annotations

from typing import Iterator

from colocate.checker import Index, Rule, Violation, suppressions
from colocate.model.names import IGNORE_ANNOTATION


def suppression_reason(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every ``colocate.io/ignore`` entry names a rule that may be suppressed and gives a reason;
    any other silences nothing."""
    rules = {r.id: r for r in index.ctx.rules} if index.ctx.rules else None
    for doc in index.docs:
        for rule_id, reason in suppressions(doc):
            field = f"metadata.annotations[{IGNORE_ANNOTATION}]"
            if not reason:
                yield Violation(doc, field, f"{rule_id} has no reason, so it suppresses nothing")
            elif rules is not None and rule_id not in rules:
                yield Violation(doc, field, f"{rule_id} is not a rule id (colocate rules lists them)")
            elif rules is not None and not rules[rule_id].suppressible:
                yield Violation(doc, field, f"{rule_id} cannot be suppressed: it keeps a promise of the platform "
                                f"({rules[rule_id].name}), so the object must change, not the rule's verdict")

"""Checks on colocate's own annotations."""
from __future__ import annotations

from typing import Iterator

from colocate.checker import Index, Rule, Violation, suppressions
from colocate.model.names import IGNORE_ANNOTATION


def suppression_reason(index: Index, rule: Rule) -> Iterator[Violation]:
    """Every ``colocate.io/ignore`` entry names a rule and gives a reason; one without a reason
    silences nothing."""
    ids = {r.id for r in index.ctx.rules} if index.ctx.rules else None
    for doc in index.docs:
        for rule_id, reason in suppressions(doc):
            field = f"metadata.annotations[{IGNORE_ANNOTATION}]"
            if not reason:
                yield Violation(doc, field, f"{rule_id} has no reason, so it suppresses nothing")
            elif ids is not None and rule_id not in ids:
                yield Violation(doc, field, f"{rule_id} is not a rule id (colocate rules lists them)")

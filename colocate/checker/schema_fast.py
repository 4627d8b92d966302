"""A quick verdict on whether a rule's JSON Schema holds, before jsonschema says why not.

Most objects pass every rule, and jsonschema builds a validator per subschema it descends into:
that cost most of the schema rules' time. :func:`compiled` turns a schema into a function that
answers True (valid), False (invalid) or None (not sure: a keyword it does not know, or anything
that raised). Only True is trusted (no findings); False and None go to jsonschema, which makes the
findings as before. Each keyword follows jsonschema 4's Draft 2020-12 semantics.
"""
from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any, Callable

Verdict = Callable[[Any], "bool | None"]

#: Keywords that annotate and never fail.
_ANNOTATIONS = frozenset({"title", "description", "$comment", "default", "examples"})
#: Draft 2020-12's type checker (jsonschema._types): bools are not numbers.
_TYPES: dict[str, Callable[[Any], bool]] = {
    "array": lambda i: isinstance(i, list),
    "boolean": lambda i: isinstance(i, bool),
    "integer": lambda i: not isinstance(i, bool) and (isinstance(i, int) or isinstance(i, float) and i.is_integer()),
    "null": lambda i: i is None,
    "number": lambda i: not isinstance(i, bool) and isinstance(i, numbers.Number),
    "object": lambda i: isinstance(i, dict),
    "string": lambda i: isinstance(i, str),
}


def _equal(one: Any, two: Any) -> bool:
    """jsonschema._utils.equal: 1 and True are different, in lists and mappings too."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(i, j) for i, j in zip(one, two))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(key in two and _equal(value, two[key]) for key, value in one.items())
    if one is True or one is False or two is True or two is False:
        return False  # unbool: a bool equals only itself, which ``is`` above found
    return one == two


def _all(verdicts: list[bool | None]) -> bool | None:
    return False if False in verdicts else None if None in verdicts else True


def _any(verdicts: list[bool | None]) -> bool | None:
    return True if True in verdicts else None if None in verdicts else False


def _keyword(name: str, value: Any, schema: dict) -> Verdict | None:
    """The check of one keyword; None for one not known here."""
    if name in _ANNOTATIONS:
        return lambda i: True
    if name == "type":
        names = value if isinstance(value, list) else [value]
        if not all(isinstance(t, str) and t in _TYPES for t in names):
            return None
        checks = [_TYPES[t] for t in names]
        return lambda i: any(check(i) for check in checks)
    if name in ("properties", "patternProperties"):
        subs = [(key, compiled(sub)) for key, sub in value.items()]
        if name == "properties":
            return lambda i: True if not isinstance(i, dict) else _all([sub(i[k]) for k, sub in subs if k in i])
        return lambda i: True if not isinstance(i, dict) else \
            _all([sub(v) for pattern, sub in subs for k, v in i.items() if re.search(pattern, k)])
    if name == "additionalProperties":
        known, patterns = schema.get("properties", {}), "|".join(schema.get("patternProperties", {}))
        sub = compiled(value) if isinstance(value, dict) else None

        def additional(i: Any) -> bool | None:
            if not isinstance(i, dict):
                return True
            extras = [k for k in i if k not in known and not (patterns and re.search(patterns, k))]
            return _all([sub(i[k]) for k in extras]) if sub is not None else bool(value) or not extras
        return additional
    if name in ("not", "allOf", "anyOf", "propertyNames", "items", "contains"):
        return _applicator(name, value, schema)
    return _assertion(name, value)


def _applicator(name: str, value: Any, schema: dict) -> Verdict | None:
    if name == "not":
        sub = compiled(value)
        return lambda i: None if (verdict := sub(i)) is None else not verdict
    if name in ("allOf", "anyOf"):
        subs = [compiled(s) for s in value]
        join = _all if name == "allOf" else _any
        return lambda i: join([sub(i) for sub in subs])
    sub = compiled(value)
    if name == "propertyNames":
        return lambda i: True if not isinstance(i, dict) else _all([sub(k) for k in i])
    if "prefixItems" in schema or "minContains" in schema or "maxContains" in schema:
        return None
    if name == "items":
        return lambda i: True if not isinstance(i, list) else _all([sub(item) for item in i])
    return lambda i: True if not isinstance(i, list) else _any([sub(item) for item in i])


def _assertion(name: str, value: Any) -> Verdict | None:
    if name == "required":
        return lambda i: not isinstance(i, dict) or all(p in i for p in value)
    if name == "const":
        return lambda i: _equal(i, value)
    if name == "enum":
        return lambda i: any(_equal(each, i) for each in value)
    if name == "pattern":
        return lambda i: not isinstance(i, str) or re.search(value, i) is not None
    if name == "maximum":
        return lambda i: not _TYPES["number"](i) or not i > value
    if name == "maxLength":
        return lambda i: not isinstance(i, str) or len(i) <= value
    return None


def compiled(schema: Any) -> Verdict:
    """The schema's quick verdict on an instance: True, False, or None (ask jsonschema)."""
    if schema is True or schema is False:
        return lambda i: schema
    if not isinstance(schema, dict):
        return lambda i: None
    try:
        checks = [_keyword(name, value, schema) for name, value in schema.items()]
    except Exception:  # a keyword of a shape jsonschema would refuse: jsonschema's to say so
        checks = [None]
    if any(check is None for check in checks):
        return lambda i: None
    if len(checks) == 1:
        return checks[0]  # type: ignore[return-value]
    return lambda i: _all([check(i) for check in checks])  # type: ignore[misc]


def holds(verdict: Verdict, instance: Any) -> bool:
    """Whether the schema surely holds (anything that raises: not sure)."""
    try:
        return verdict(instance) is True
    except Exception:
        return False

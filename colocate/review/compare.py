"""Field-level diff of two objects, as the API server would see them.

Key order never matters; lists of named items (containers, env, ports, volumes...) are matched
by name, so inserting one item shows as one added item, not a shifted list; resource
quantities compare by value (``1000m`` == ``1``, ``1024Mi`` == ``1Gi``), as the API server
stores them canonically.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from colocate.model import quantity

#: Lists Kubernetes merges by the items' ``name`` (the strategic-merge-patch key of
#: containers, initContainers, ephemeralContainers, env, volumes, volumeMounts; ports of a
#: Service and named container ports are matched the same way here).
NAMED_LISTS = frozenset({"containers", "initContainers", "ephemeralContainers", "env", "ports", "volumes",
                         "volumeMounts"})
#: Maps whose values are resource quantities: container requests/limits, ResourceQuota hard,
#: LimitRange bounds, PVC requests, pod overhead.
QUANTITY_MAPS = frozenset({"requests", "limits", "hard", "default", "defaultRequest", "max", "min", "overhead",
                           "capacity"})
#: Single quantity fields.
QUANTITY_FIELDS = frozenset({"sizeLimit"})
ABSENT = object()


@dataclass(frozen=True)
class FieldChange:
    """One changed field: its path (``spec.template.spec.containers[name=app].image``) and
    the values before and after (``None`` where the field is absent)."""

    path: str
    old: Any
    new: Any


def _same_quantity(old: Any, new: Any) -> bool:
    try:
        return quantity.parse(old) == quantity.parse(new)
    except (ValueError, TypeError):
        return False


def _named(items: list) -> dict[str, Any] | None:
    """name -> item when every item is a mapping with a distinct name, else None."""
    names = [i.get("name") if isinstance(i, dict) else None for i in items]
    if None in names or len(set(names)) != len(names):
        return None
    return dict(zip(names, items))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def diff(old: Any, new: Any, path: str = "", key: str = "", parent: str = "") -> list[FieldChange]:
    """Every leaf-level difference between ``old`` and ``new``; empty when they are the same
    object to the API server."""
    if old is ABSENT or new is ABSENT:
        return [FieldChange(path, None if old is ABSENT else old, None if new is ABSENT else new)]
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new), key=str):
            out += diff(old.get(k, ABSENT), new.get(k, ABSENT), _join(path, str(k)), str(k), key)
        return out
    if isinstance(old, list) and isinstance(new, list):
        by_name_old, by_name_new = (_named(old), _named(new)) if key in NAMED_LISTS else (None, None)
        if by_name_old is not None and by_name_new is not None:
            out = []
            for name in sorted(set(by_name_old) | set(by_name_new)):
                out += diff(by_name_old.get(name, ABSENT), by_name_new.get(name, ABSENT),
                            f"{path}[name={name}]", key, parent)
            return out
        if len(old) != len(new):
            return [FieldChange(path, old, new)]
        out = []
        for i, (o, n) in enumerate(zip(old, new)):
            out += diff(o, n, f"{path}[{i}]", key, parent)
        return out
    if old == new and type(old) is type(new):
        return []
    if (parent in QUANTITY_MAPS or key in QUANTITY_FIELDS) and _same_quantity(old, new):
        return []
    return [FieldChange(path, old, new)]

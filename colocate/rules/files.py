"""The rule files of ``policies/rules/`` as data: what each rule is, says and asks (its schema,
its Python check's name, its admission CEL), and the placeholders its text may use. Read by the
checker (which runs them) and by synth (which turns the admission CEL into policies); what
running a rule means is the checker's (colocate/checker/)."""
from __future__ import annotations

import json
import string
from dataclasses import MISSING, dataclass, fields, replace
from pathlib import Path
from typing import Any, Iterable

from colocate.base import compiled
from colocate.errors import ColocateError, InputError
from colocate.model.cluster import Cluster
from colocate.model.names import TIER_LABEL, kps_fullname
from colocate.base.data_files import data_path

RULES_DIR = data_path("colocate.policies", "rules")
_RULE_SCHEMA_PATH = data_path("colocate.base", "data", "schemas", "rule.schema.json")
_RULE_SCHEMA = json.loads(_RULE_SCHEMA_PATH.read_text())


def fill(value: Any, values: dict[str, str]) -> Any:
    """Replace ``${name}`` placeholders in every string of a rule's schema or text."""
    if isinstance(value, str):
        return string.Template(value).substitute(values)
    if isinstance(value, dict):
        return {k: fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, values) for v in value]
    return value


@dataclass(frozen=True)
class Rule:
    id: str
    name: str
    severity: str
    category: str
    target: str
    rationale: str
    message: str
    fix: str
    scope: str = "all"
    kinds: tuple[str, ...] = ()
    schema: dict | None = None
    check: str | None = None
    #: "object": the findings on an object depend on that object and the context alone (every
    #: schema rule; a Python check says so); "tree": the check reads other objects too.
    judges: str = "object"
    #: "all" or "first": a Python check also sees every other object (or the first of each file)
    #: as its skeleton; None: it sees only what target and kinds name.
    skeletons: str | None = None
    #: CEL the generated ValidatingAdmissionPolicy runs (colocate/rules/admission.py); None: check only.
    admission: dict | None = None
    #: False: no ``colocate.io/ignore`` entry silences it (it keeps one of the platform's promises).
    suppressible: bool = True
    #: Values its Python check reads (an allow-list: ``allowed``), kept in the rule file, not in code.
    params: dict | None = None
    #: The rule file it was read from, for errors about the rule itself ("": not from a file).
    file: str = ""

    def filled(self, values: dict[str, str]) -> "Rule":
        """The rule with the ``${name}`` placeholders of its message and fix replaced, as findings
        show them (a rationale has none: it may quote ``$`` from PromQL or Grafana)."""
        return replace(self, message=fill(self.message, values), fix=fill(self.fix, values))


def read_rules(rules_dir: Path = RULES_DIR) -> tuple[Rule, ...]:
    """Every rule file, validated and ordered by id. A malformed one is bad input (exit 2). Read
    once per installation (colocate.base.compiled), then from its parsed form."""
    files = sorted(rules_dir.glob("*.yaml"))
    if not files:
        # An installed colocate without its rule files would pass everything: refuse instead.
        raise ColocateError(f"no policy rule found in {rules_dir}; the colocate installation is incomplete "
                            "(reinstall it, or check the package data in pyproject.toml)")
    rows = compiled.load("rules", files, _READERS, lambda: _parse_rules(files), _rows_valid)
    rules = tuple(Rule(**{**row, "kinds": tuple(row["kinds"])}) for row in rows)
    ids = [r.id for r in rules]
    if len(set(ids)) != len(ids):
        raise InputError(str(rules_dir), "", "two rule files share an id")
    return rules


def _parse_rules(files: list[Path]) -> list[dict[str, Any]]:
    from colocate.base import validated_yaml  # here: a check answered from its cache needs none of it

    rows = []
    for path in files:
        data = validated_yaml.load_yaml_file(path)
        validated_yaml.validate(data, _RULE_SCHEMA, str(path))
        if not path.stem.startswith(data["id"]):
            raise InputError(str(path), "$.id", f"file name must start with the rule id {data['id']}")
        _parse_examples(data.pop("examples", {}), str(path))  # the tests' (rule_examples), not the checker's
        rows.append({**data, "kinds": list(data.get("kinds", ())), "file": str(path)})
    return rows


def _parse_examples(examples: dict[str, list], file: str) -> dict[str, list[str]]:
    """A rule file's ``examples``, each as a manifest file's text. Text that is not YAML, or holds
    no object or something other than objects, is bad input naming the example."""
    import yaml

    from colocate.base import safe_yaml

    out: dict[str, list[str]] = {}
    for verdict, items in examples.items():
        for index, item in enumerate(items):
            where = f"$.examples.{verdict}[{index}]"
            if isinstance(item, dict):
                out.setdefault(verdict, []).append(yaml.safe_dump(item, sort_keys=False))
                continue
            try:
                docs = [d for d in safe_yaml.load_all(item) if d is not None]
            except yaml.YAMLError as exc:
                raise InputError(file, where, f"not valid YAML: {getattr(exc, 'problem', None) or exc}; write the "
                                 "manifest as a literal block (`- |`) or as one object") from None
            if not docs or not all(isinstance(d, dict) and "apiVersion" in d and "kind" in d for d in docs):
                raise InputError(file, where, "each YAML document must be a Kubernetes object with apiVersion and "
                                 "kind; write the manifest as a literal block (`- |`), objects separated by ---")
            out.setdefault(verdict, []).append(item)
    return out


def rule_examples(rule: Rule) -> dict[str, list[str]]:
    """The ``examples`` of the rule's file: {"fail": [manifest text, ...], "pass": [...]}, empty
    when it has none (its cases are then fixture files only). Read from the file each time: the
    checker never needs them, so the loaded rules (and the verdict cache) do not carry them."""
    from colocate.base import validated_yaml

    if not rule.file:
        return {}
    data = validated_yaml.load_yaml_file(Path(rule.file))
    return _parse_examples(data.get("examples", {}) if isinstance(data, dict) else {}, rule.file)


#: What reads the rule files: a change to any of them is a new compiled form.
_READERS = [Path(__file__), Path(__file__).parent.parent / "config.py", _RULE_SCHEMA_PATH]
_FIELDS = frozenset(f.name for f in fields(Rule))
_REQUIRED = frozenset(f.name for f in fields(Rule) if f.default is MISSING)


def _rows_valid(rows: Any) -> bool:
    """A kept form has the shape :func:`_parse_rules` gives (never trusted otherwise)."""
    return isinstance(rows, list) and bool(rows) and all(
        isinstance(row, dict) and _REQUIRED <= row.keys() <= _FIELDS and isinstance(row["kinds"], list)
        and all(isinstance(row[f], str) for f in _REQUIRED) for row in rows)


def placeholder_values(cluster: Cluster, registry_host: str = "", proxied_registries: Iterable[str] = (),
                       offline_namespaces: Iterable[str] = ()) -> dict[str, str]:
    """The ``${name}`` placeholders rule files may use, from the cluster and colocate.yaml."""
    return {"online_priority": cluster.tier("online").name, "offline_priority": cluster.tier("offline").name,
            "registry_host": registry_host, "proxied_registries": ", ".join(sorted(proxied_registries)),
            "online_taint_key": cluster.online_taint.key, "tier_label": TIER_LABEL,
            "tier_classes": ", ".join(t.name for t in cluster.tiers), "online_namespace": cluster.online_namespace,
            "training_namespace": cluster.training_namespace,
            "offline_namespaces": ", ".join(sorted(offline_namespaces or (cluster.training_namespace,))),
            "kps_fullname": kps_fullname(cluster.prometheus_release)}

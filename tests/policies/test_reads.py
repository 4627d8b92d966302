"""Each Python check is handed what its rule file declares (target, kinds, skeletons, and its
@reads callables: checker.Reads) and is run over just that, with or without the verdict cache. A
declaration that leaves out something the check needs changes its findings (or, for a kind it asks
for by name, is refused): here every check judges dist/ and every rule's cases (fixture files
and its file's examples) both ways."""
from __future__ import annotations

from pathlib import Path

import pytest

from colocate import checker, config
from colocate.checker import manifests
from colocate.checker.context import checked_context
from colocate.checker.reads import EVERYTHING
from tests.helpers import ROOT
from tests.policies.rule_cases import FIXTURES, cases, examples_tree

CHECKS = [r for r in checker.load_rules() if r.check is not None]
CROSS = [r for r in CHECKS if not checker.judges_alone(r)]


def _inputs(examples: Path) -> list[tuple[str, list[Path]]]:
    # Every case together too: one rule's objects meet another's (a pod and a PriorityClass).
    rules = checker.load_rules()
    out = [("dist", [ROOT / "dist"]), ("all fixtures", [FIXTURES, examples_tree(rules, examples)])]
    return out + [(case.where, [case.path(examples)]) for case in cases(rules)]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory) -> list[tuple[str, list, object]]:
    """(name, objects, context) of every input, read once for all the rules: reading them takes
    about 4 s, judging one rule over all of them a few milliseconds."""
    rules = checker.load_rules()
    out = []
    for name, paths in _inputs(tmp_path_factory.mktemp("rule-examples")):
        docs = manifests.load(paths)
        out.append((name, docs, checked_context(config.load(), docs, None, rules)))
    return out


def _lossless(declared, docs: list, ctx) -> checker.Index:
    """What the check would see if its view lost nothing: every object whole where the view
    reduces some (skeletons, projections, objects a predicate picks); else every object of the
    kinds it is handed, whole, which the kinds name as targeting (a kind it asks for and is not
    handed is refused: tests/policies/test_undeclared_read.py)."""
    if declared.whole is not None or declared.project is not None or declared.skeleton:
        return checker.Index(docs, ctx)
    return checker.Index([d for d in docs if declared.by_kind(d.kind, False) == checker.WHOLE], ctx)


@pytest.mark.parametrize("rule", CHECKS, ids=lambda r: r.id)
def test_a_check_finds_the_same_over_what_it_declares_as_over_what_it_would_see_whole(rule, loaded):
    declared = checker.rule_reads(rule)
    compared = 0
    for name, docs, ctx in loaded:
        lossless = _lossless(declared, docs, ctx)
        full = checker.evaluate([rule], lossless, viewed={id(declared): lossless})
        viewed = checker.evaluate([rule], checker.Index(docs, ctx))
        assert viewed == full, f"{rule.id} on {name}"
        compared += bool(full)
    assert compared, f"{rule.id} found nothing anywhere: the comparison proved nothing"


def test_every_cross_object_rule_declares_what_it_reads():
    """Undeclared, a rule reads every object whole: never wrong, but re-run at every change."""
    assert [r.id for r in CROSS if checker.rule_reads(r) is EVERYTHING] == []

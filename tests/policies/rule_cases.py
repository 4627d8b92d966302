"""Each rule's test cases, from both places a rule keeps them: its fixture files
(tests/policies/fixtures/<ID>/fail*.yaml, pass*.yaml) and the ``examples`` of its rule file
(colocate/base/data/schemas/rule.schema.json). Every test that runs the rules' cases reads them here."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from colocate import ROOT
from colocate.checker import Rule
from colocate.rules.files import rule_examples

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Case:
    rule: str  #: the rule's id
    verdict: str  #: "fail": the rule fires on it; "pass": no rule does
    name: str  #: its file's name in the rule's folder: fail.yaml, or fail.example-0.yaml for examples.fail[0]
    where: str  #: what a failure names: the fixture file, or the rule file and the example's index
    text: str | None = None  #: an example's manifest; None for a fixture file

    @property
    def id(self) -> str:
        return f"{self.rule}/{self.name}"

    def manifest(self) -> str:
        return (FIXTURES / self.rule / self.name).read_text() if self.text is None else self.text

    def path(self, folder: Path) -> Path:
        """The case as a file: a fixture file where it is, an example written to folder/<ID>/<name>."""
        if self.text is None:
            return FIXTURES / self.rule / self.name
        out = folder / self.rule / self.name
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(self.text)
        return out


def cases(rules: Iterable[Rule], verdict: str | None = None) -> list[Case]:
    """Every case of the rules (of one verdict, when given): fixture files first, then examples."""
    out = []
    for rule in rules:
        for path in sorted((FIXTURES / rule.id).glob("*.yaml")):
            kind = "fail" if path.name.startswith("fail") else "pass" if path.name.startswith("pass") else ""
            out.append(Case(rule.id, kind, path.name, str(path.relative_to(ROOT))))
        where = os.path.relpath(rule.file, ROOT)
        for kind, texts in rule_examples(rule).items():
            out += [Case(rule.id, kind, f"{kind}.example-{i}.yaml", f"{where} examples.{kind}[{i}]", text)
                    for i, text in enumerate(texts)]
    return [c for c in out if verdict is None or c.verdict == verdict]


def examples_tree(rules: Iterable[Rule], folder: Path) -> Path:
    """``folder`` holding every rule's examples as files, laid out as tests/policies/fixtures/ is
    (<ID>/fail.example-0.yaml), for the tests that read every case together."""
    folder.mkdir(parents=True, exist_ok=True)
    for case in cases(rules):
        if case.text is not None:
            case.path(folder)
    return folder


if __name__ == "__main__":
    # `python -m tests.policies.rule_cases COL999/fail.example-0.yaml`: that case's manifest, as the
    # test ids name it, to pipe into `colocate check -`.
    import sys

    from colocate.checker import load_rules

    wanted = sys.argv[1:]
    found = {c.id: c for c in cases(load_rules())}
    for name in wanted:
        if name not in found:
            sys.exit(f"no case {name}; the cases of that rule: {', '.join(i for i in found if i.startswith(name.split('/')[0] + '/'))}")
        sys.stdout.write(found[name].manifest())

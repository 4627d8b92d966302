"""AdmissionPolicies: a ValidatingAdmissionPolicy and its binding per rule that judges an object
on its own (colocate/rules/admission.py builds them from the rules' ``admission:`` CEL; docs/admission.md)."""
from __future__ import annotations

from typing import Iterable, Sequence

from constructs import Construct

from colocate.rules import admission
from colocate.rules.files import Rule
from colocate.constructs._k8s import emit


class AdmissionPolicies(Construct):
    """One policy and one binding per enforced rule, their configuration values as CEL literals."""

    def __init__(self, scope: Construct, id: str, rules: Iterable[Rule], values: dict[str, str],
                 platform: Sequence[str] = (), error_actions: Sequence[str] = admission.DENY):
        super().__init__(scope, id)
        self.objects = admission.policies(rules, values, platform, error_actions)
        for obj in self.objects:
            emit(self, f"{obj['kind']}-{obj['metadata']['name']}", obj)

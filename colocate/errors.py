"""The few errors colocate raises. Each message says what is wrong, where, and the fix."""
from __future__ import annotations


class ColocateError(Exception):
    """A problem in the user's input; the CLI prints it and exits 2."""


class PropError(ColocateError, ValueError):
    """A construct was given props it cannot turn into a safe cluster object.

    The message names the construct, the prop and the reason, e.g.
    ``NodePool 'online': prop 'kubelet.cpu_manager_policy': ...``.
    """

    def __init__(self, construct: str, prop: str, reason: str):
        self.construct = construct
        self.prop = prop
        self.reason = reason
        super().__init__(f"{construct}: prop '{prop}': {reason}")


class InputError(ColocateError):
    """A file (config, job request, manifest) that cannot be used as it is."""

    def __init__(self, file: str, where: str, reason: str):
        self.file = file
        self.where = where
        self.reason = reason
        location = f"{file}:{where}" if where else file
        super().__init__(f"{location}: {reason}")

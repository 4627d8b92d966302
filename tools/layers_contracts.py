"""import-linter's contract types, made to see colocate's namespace folders.

``constructs/``, ``charts/`` and ``policies/`` have no ``__init__.py`` and are mapped under
``colocate`` (colocate/__init__.py), so pyproject's ``[tool.importlinter]`` lists them as root
packages of their own. grimp finds every module in them under its right name
(``colocate.charts.nodes``), but names the folders themselves from their file-system path
(``.work.clone.charts`` for ``colocate.charts``), so a contract could not name a folder as a whole.
Each type here puts the folders back under their import names before the stock check runs; the
checks themselves are import-linter's.
"""
from __future__ import annotations

from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.contracts.layers import LayersContract


def restore_packages(graph) -> None:
    """Drop the path-named folders and add every missing parent package of a module."""
    for module in [m for m in graph.modules if m.startswith(".")]:
        graph.remove_module(module)
    for module in list(graph.modules):
        parts = module.split(".")
        for end in range(1, len(parts)):
            parent = ".".join(parts[:end])
            if parent not in graph.modules:
                graph.add_module(parent)


class Layers(LayersContract):
    def check(self, graph, verbose):
        restore_packages(graph)
        return super().check(graph, verbose)


class Forbidden(ForbiddenContract):
    def check(self, graph, verbose):
        restore_packages(graph)
        return super().check(graph, verbose)


class Independence(IndependenceContract):
    def check(self, graph, verbose):
        restore_packages(graph)
        return super().check(graph, verbose)

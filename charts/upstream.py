"""Upstream software rendered into dist/: a vendored Helm chart or kustomize overlay, rendered at
synth time (colocate/synth/vendor_render.py) into ``apps/<folder>/`` and synced by its own Application as
plain YAML (docs/gitops.md "Rendered manifests"). What Argo CD applies is then what ``check``
judged and ``simulate`` ran, and the cluster needs no chart repository or GitHub.

Rendered objects are written as the renderer gives them (keys sorted, one file per object): no
colocate labels, since the charts' own selectors use theirs."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from constructs import Construct

from colocate.base import goyaml, vendored
from colocate.synth import vendor_render, write
from colocate.charts._base import AppSpec, ColocateChart
from colocate.config import Config
from colocate.constructs.argocd_application import git_directory
from colocate.errors import InputError
from colocate.base.layout import INDEX_FILE


#: Objects rendered in this process, by inputs digest: a second build of the same inputs (diff's
#: two trees, the tests) does not run the renderer again.
_RENDERED: dict[str, list[dict[str, Any]]] = {}


@dataclass(frozen=True)
class Rendered:
    """One row of the Application table whose objects a renderer makes from a vendored tree.

    Name a Helm Application like its release: before Argo CD 3.0 the tracking label
    ``app.kubernetes.io/instance=<Application>`` overwrites the chart's own instance label, and
    selectors that use it (ServiceMonitor -> Service) break unless both are equal."""

    #: Application name.
    name: str
    #: Folder under dist/apps/.
    folder: str
    source: vendor_render.Source
    #: The version colocate pins; the vendored tree must hold it.
    version: str
    wave: int
    sync_options: Sequence[str]
    destination_namespace: str
    #: Cascade deletion of the Application to its objects (False where it holds CRDs).
    cascade_delete: bool = True


class RenderedChart(ColocateChart):
    """``dist/apps/<folder>/``: the rendered objects of one upstream source."""

    def __init__(self, scope: Construct, row: Rendered, target: vendor_render.Target):
        super().__init__(scope, row.folder, folder=f"apps/{row.folder}", labels=False)
        self.row, self.target = row, target
        tree = vendored.load()[row.source.tree]
        if tree.version != row.version:
            raise InputError(tree.path, "", f"holds {row.source.tree} {tree.version}, but colocate pins {row.version}; "
                             f"re-vendor it with scripts/vendor_refresh.py (docs/third-party.md)")
        self.inputs = vendor_render.inputs_digest(row.source, target)
        #: Set by objects(): "rendered" or the dist/ folder the objects were read back from.
        self.origin: str | None = None
        #: Set by objects() when read back: each file's text (name -> text), as synth wrote it.
        self.texts: dict[str, str] = {}

    @property
    def app_name(self) -> str:
        return self.row.name

    def applications(self, config: Config) -> list[AppSpec]:
        g, r = config.gitops, self.row
        return [AppSpec(r.folder, r.name, git_directory(g.repo_url, g.target_revision, f"dist/{self.folder}"),
                        r.wave, tuple(r.sync_options), destination_namespace=r.destination_namespace,
                        cascade_delete=r.cascade_delete)]

    def objects(self, reuse: Sequence[Path] = ()) -> list[dict[str, Any]]:
        """The rendered objects: read back from the first tree of ``reuse`` (dist/ folders) whose
        index records the same inputs and whose files are still the ones it recorded, else from
        the renderer."""
        for tree in reuse:
            found = self._read_back(tree)
            if found is not None:
                self.origin, (objects, self.texts) = str(tree), found
                return objects
        self.origin, self.texts = "rendered", {}
        if self.inputs not in _RENDERED:
            _RENDERED[self.inputs] = vendor_render.render(self.row.source, self.target)
        return copy.deepcopy(_RENDERED[self.inputs])

    def rendering(self, written: Sequence[Mapping[str, Any]]) -> tuple[dict[str, str], dict[str, Any]]:
        # Dumped once (the writer takes these texts); files read back are their own text.
        files = self.texts or {write.Manifest(self.folder, obj).filename: write.dump(write.canonical(obj))
                               for obj in written}
        source = self.row.source
        root = vendored.load()[source.tree].path
        where = f"{root}/{source.path}" if isinstance(source, vendor_render.KustomizeSource) else root
        return files, {"renderer": source.renderer, "source": where, "inputs": self.inputs,
                       "output": vendor_render.output_digest(files)}

    def _read_back(self, tree: Path) -> tuple[list[dict[str, Any]], dict[str, str]] | None:
        try:
            index = goyaml.load_plain((tree / INDEX_FILE).read_text(), INDEX_FILE)
            entry = index["folders"][self.folder]
            record = entry["rendered"]
            if record.get("inputs") != self.inputs:
                return None
            files = {o["file"]: (tree / self.folder / o["file"]).read_text() for o in entry["objects"]}
        except Exception:  # noqa: BLE001 - any tree that does not read as recorded is re-rendered, never trusted
            return None
        if vendor_render.output_digest(files) != record.get("output"):
            return None
        return [goyaml.load_plain(text, f"{self.folder}/{name}") for name, text in sorted(files.items())], files

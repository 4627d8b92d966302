"""Render the vendored upstream sources (vendor/) with the renderers Argo CD v2.10.15 bundles, offline,
into the objects synth writes to dist/ (docs/gitops.md "Rendered manifests").

A Helm chart is rendered the way Argo CD's repo server renders one (argo-cd v2.10.15
util/helm/cmd.go ``template``): ``helm template <chart> --name-template <release> --namespace <ns>
--kube-version <v> --values <file> --api-versions ... --include-crds``. A kustomize overlay is built
with Argo CD's ``spec.source.kustomize`` fields (namespace, images, patches) in a kustomization that
wraps the vendored overlay. Both run with an empty home and a proxy that refuses every connection,
so nothing can come from the network or a chart repository configured on the machine.

Rendering needs helm and kustomize at the pinned versions (colocate/synth/renderers.py
``binary``: $HELM/$KUSTOMIZE, PATH, then the tool folder, built there with Go on first use,
minutes cold). A tree
synth wrote before is reused instead when its inputs are the same: the index records, per
rendered folder, a digest of the inputs (renderer, vendored trees, values, versions) and of the
files written; a folder whose files still have that digest and whose inputs have not changed is
read back, so a fresh clone synthesizes the reference without building the renderers."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from colocate.base import goyaml, vendored
from colocate.base.go_builds import ToolMissing
from colocate.errors import InputError
from colocate.model.names import COMPARE_OPTIONS, SYNC_OPTIONS

#: A proxy on the discard port: any attempt to fetch fails at once.
_DEAD_PROXY = "http://127.0.0.1:9"


@dataclass(frozen=True)
class HelmSource:
    """A vendored chart, rendered as Argo CD renders a Helm source with ``valuesObject``."""

    #: Name of the tree in vendor/sources.yaml.
    tree: str
    release: str
    namespace: str
    values: Mapping[str, Any]
    #: Annotations added after rendering, by ``Kind`` or ``Kind/name`` (see :func:`annotate`).
    annotate: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def renderer(self) -> str:
        return "helm"


@dataclass(frozen=True)
class KustomizeSource:
    """A vendored kustomize overlay with Argo CD's ``spec.source.kustomize`` fields."""

    #: Name of the tree in vendor/sources.yaml, and the overlay's path inside it.
    tree: str
    path: str
    namespace: str
    #: ``name=newName:newTag`` as in ``kustomize edit set image``.
    images: Sequence[str] = ()
    #: ``{"target": {...}, "patch": "<yaml>"}`` as in ``spec.source.kustomize.patches``.
    patches: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    #: Annotations added after rendering, by ``Kind`` or ``Kind/name`` (see :func:`annotate`).
    annotate: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def renderer(self) -> str:
        return "kustomize"


Source = HelmSource | KustomizeSource


@dataclass(frozen=True)
class Target:
    """What the renderer is told about the cluster, as Argo CD passes it from the destination."""

    kube_version: str
    #: API group/versions the cluster serves beyond the built-in ones Helm knows (its CRDs').
    api_versions: tuple[str, ...] = ()


def _versions() -> dict[str, str]:
    from colocate.synth.renderers import HELM_VERSION, KUSTOMIZE_VERSION
    return {"helm": HELM_VERSION, "kustomize": KUSTOMIZE_VERSION}


def inputs_digest(source: Source, target: Target) -> str:
    """SHA-256 of everything the rendered objects depend on: the renderer and its version, the
    recorded checksum of every vendored tree the source reads, the source's fields, the target."""
    trees = vendored.load()
    root = trees[source.tree].path
    read = {name: tree.sha256 for name, tree in sorted(trees.items())
            if tree.path == root or tree.path.startswith(root.rstrip("/") + "/")}
    fields = dict(vars(source))
    # PyYAML writes the files: a new version may write the same objects differently.
    doc = {"renderer": source.renderer, "version": _versions()[source.renderer], "pyyaml": yaml.__version__, "trees": read,
           "source": fields, "target": vars(target)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=list).encode()).hexdigest()


def output_digest(files: Mapping[str, str]) -> str:
    """SHA-256 of a rendered folder's files (name -> text), in name order."""
    digest = hashlib.sha256()
    for name in sorted(files):
        data = files[name].encode()
        digest.update(name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return digest.hexdigest()


def render(source: Source, target: Target) -> list[dict[str, Any]]:
    """The objects the renderer gives, in its order. Raises InputError naming the tree when it fails."""
    from colocate.synth import renderers

    tree = vendored.load()[source.tree]
    try:
        program = str(renderers.binary(source.renderer))
    except ToolMissing as exc:
        raise ToolMissing(f"rendering {tree.path} needs {source.renderer}: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="colocate-render-") as tmp:
        work = Path(tmp)
        if isinstance(source, HelmSource):
            values = work / "values.yaml"
            values.write_text(json.dumps(source.values, sort_keys=True))
            argv = [program, "template", str(tree.root), "--name-template", source.release,
                    "--namespace", source.namespace, "--kube-version", target.kube_version,
                    "--values", str(values), *(a for v in target.api_versions for a in ("--api-versions", v)),
                    "--include-crds"]
        else:
            wrapper = work / "wrapper"
            wrapper.mkdir()
            kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                             # kustomize takes relative paths only
                             "resources": [os.path.relpath(tree.root / source.path, wrapper)], "namespace": source.namespace,
                             "images": [_image(i) for i in source.images],
                             "patches": [dict(p) for p in source.patches]}
            (wrapper / "kustomization.yaml").write_text(yaml.safe_dump(kustomization, sort_keys=False))
            argv = [program, "build", str(wrapper)]
        home = work / "home"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "HELM_CACHE_HOME": str(home / "cache"),
               "HELM_CONFIG_HOME": str(home / "config"), "HELM_DATA_HOME": str(home / "data"),
               "HTTP_PROXY": _DEAD_PROXY, "HTTPS_PROXY": _DEAD_PROXY, "http_proxy": _DEAD_PROXY,
               "https_proxy": _DEAD_PROXY, "NO_PROXY": ""}
        result = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise InputError(tree.path, "", f"{source.renderer} failed (exit {result.returncode}): "
                         f"{result.stderr.strip()[-2000:]}")
    objects = [doc for doc in goyaml.load_all_plain(result.stdout, tree.path) if isinstance(doc, dict)]
    return annotate(objects, source.annotate)


#: Annotations whose values are comma-separated lists Argo CD reads item by item: an added list
#: joins the chart's own instead of replacing it.
_LISTS = frozenset({SYNC_OPTIONS, COMPARE_OPTIONS})


def annotate(objects: list[dict[str, Any]], by: Mapping[str, Mapping[str, str]]) -> list[dict[str, Any]]:
    """Add annotations to rendered objects, by ``Kind`` (every object of the kind) or ``Kind/name``:
    what the charts offer no value for (Argo CD's deletion protection on their CRDs, a reasoned
    ``colocate.io/ignore``). A key that matches nothing is an error, so a chart upgrade that renames
    an object cannot silently drop an annotation."""
    used = set()
    for obj in objects:
        meta = obj.setdefault("metadata", {})
        for key in (obj.get("kind"), f"{obj.get('kind')}/{meta.get('name')}"):
            if key not in by:
                continue
            used.add(key)
            annotations = meta.get("annotations") or {}
            for name, value in by[key].items():
                old = annotations.get(name)
                if name in _LISTS and old:
                    items = [i.strip() for i in f"{old},{value}".split(",") if i.strip()]
                    value = ",".join(dict.fromkeys(items))
                annotations[name] = value
            meta["annotations"] = annotations
    unused = sorted(set(by) - used)
    if unused:
        raise InputError("colocate (charts/)", "", f"annotations for {', '.join(unused)}, which the renderer no "
                         "longer gives: update the rendered row's annotate")
    return objects


def _image(spec: str) -> dict[str, str]:
    """``name=newName:newTag`` as a kustomization ``images`` entry."""
    name, _, new = spec.partition("=")
    new_name, _, tag = new.rpartition(":") if ":" in new.rsplit("/", 1)[-1] else (new, "", "")
    return {"name": name, "newName": new_name, **({"newTag": tag} if tag else {})}

"""Kubernetes' schemas for kubeconform at check time: where they are, and a copy kubeconform can load.

The check (colocate/checker/kubeconform.py) and colocate.yaml's validation (config.py, which version is
served) read this; the build-time schema generator (colocate/schemagen/) writes the files that
:data:`CRD_SCHEMA_LOCATION` finds.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

#: kubeconform ``-schema-location`` template below ``policies/schemas/``.
SCHEMA_LOCATION = "{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json"

#: kubeconform ``-schema-location`` for the files ``colocate.schemagen.crd.write_schemas`` writes, relative to the
#: repository root (kubeconform resolves a relative location against its working directory).
CRD_SCHEMA_LOCATION = "policies/schemas/" + SCHEMA_LOCATION

#: kubeconform ``-schema-location`` for :func:`prepare_core_schemas` output; ``{root}`` is the
#: directory it returns. ``{{.NormalizedKubernetesVersion}}`` is ``v`` + the value of
#: ``-kubernetes-version`` (``master`` without it), ``{{.StrictSuffix}}`` is ``-strict`` under
#: ``-strict``, ``{{.KindSuffix}}`` is ``-<first label of the group>-<version>`` (``-v1`` for core).
CORE_SCHEMA_LOCATION = (
    "{root}/{{{{.NormalizedKubernetesVersion}}}}-local{{{{.StrictSuffix}}}}/"
    "{{{{.ResourceKind}}}}{{{{.KindSuffix}}}}.json"
)


def kubernetes_validate_dir() -> Path:
    """``.../site-packages/kubernetes_validate/kubernetes-json-schema`` of the installed package.
    Found, not imported: importing kubernetes_validate takes 0.15 s of every check's start-up."""
    import importlib.util

    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.origin:
        raise ModuleNotFoundError("No module named 'kubernetes_validate'", name="kubernetes_validate")
    return Path(spec.origin).resolve().parent / "kubernetes-json-schema"


_SHARED_REF = "/api/_definitions.json#/$defs/"
_LOCAL_REF = "#/$defs/"


def _self_contained(doc: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the definitions it reaches (transitively) under its own ``$defs``."""
    needed: dict[str, Any] = {}

    def local(node: Any) -> Any:
        if isinstance(node, dict):
            out = {key: local(value) for key, value in node.items()}
            ref = out.get("$ref")
            if isinstance(ref, str) and ref.startswith((_SHARED_REF, _LOCAL_REF)):
                name = ref.split("/$defs/", 1)[1]
                out["$ref"] = _LOCAL_REF + name
                if name not in needed:
                    needed[name] = None  # placeholder first: definitions refer to themselves
                    needed[name] = local(definitions[name])
            return out
        if isinstance(node, list):
            return [local(item) for item in node]
        return node

    out = local(doc)
    if needed:
        out["$defs"] = needed
    return out


def prepare_core_schemas(
    dest_root: str | os.PathLike[str],
    k8s_version: str,
    *,
    strict: bool = True,
    source_root: str | os.PathLike[str] | None = None,
) -> Path:
    """Write a kubeconform-loadable copy of kubernetes-validate's schemas; return its root.

    kubernetes-validate's files (``v1.28.0-local-strict/deployment-apps-v1.json``, ...) are in
    kubeconform's layout, but each sets ``$id: https://kubernetes.io/api/<kind>/...`` and refers
    to ``/api/_definitions.json#/$defs/...``, which resolves to
    ``https://kubernetes.io/api/_definitions.json``. kubeconform then tries to fetch that URL,
    fails (offline, or 404 online), and reports only ``could not find schema for Deployment``.
    The copy drops ``$id`` and makes each kind's file self-contained: the definitions it reaches
    are copied under its own ``$defs`` and its references point there. kubeconform v0.7.0 builds
    a fresh compiler per kind (pkg/validator/validator.go ``downloadSchema``), so a reference to
    the shared 0.9 MB ``_definitions.json`` made it parse and compile that file once per kind:
    about 0.2 s of CPU each, a third of its time on a 10,000-object mix. Validation is unchanged:
    the same definitions, only found locally. ``_definitions.json`` is still copied as it is.

    Output: ``<dest_root>/v<k8s_version>-local[-strict]/*.json``; use it with
    ``CORE_SCHEMA_LOCATION.format(root=...)`` and ``-kubernetes-version <k8s_version>``.
    The copy is made once per kubernetes-validate content (a ``.source-sha256`` stamp) and
    replaced atomically, so concurrent runs are safe.
    """
    src_root = Path(source_root) if source_root else kubernetes_validate_dir()
    sub = f"v{k8s_version.lstrip('v')}-local" + ("-strict" if strict else "")
    src = src_root / sub
    if not src.is_dir():
        raise FileNotFoundError(f"kubernetes-validate has no schemas for {sub} ({src})")
    files = sorted(src.glob("*.json"))
    digest = hashlib.sha256(b"self-contained kinds, ctime\n")  # the copy's format: a new one redoes old caches
    for f in files:
        st = f.stat()
        digest.update(f"{f.name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\n".encode())
    stamp_value = digest.hexdigest()

    dest_root = Path(dest_root)
    dest = dest_root / sub
    stamp = dest / ".source-sha256"
    if stamp.is_file() and stamp.read_text().strip() == stamp_value:
        return dest_root

    dest_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{sub}.", dir=dest_root))
    try:
        definitions = json.loads((src / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
        for f in files:
            doc = json.loads(f.read_text(encoding="utf-8"))
            doc.pop("$id", None)
            if f.name != "_definitions.json":
                doc = _self_contained(doc, definitions)
            text = json.dumps(doc, separators=(",", ":"), sort_keys=True)
            (tmp / f.name).write_text(text + "\n", encoding="utf-8")
        (tmp / ".source-sha256").write_text(stamp_value + "\n")
        old = None
        if dest.exists():
            old = dest.with_name(f".{sub}.old-{os.getpid()}")
            os.replace(dest, old)
        try:
            os.replace(tmp, dest)
        except OSError:
            # Another process won the race; its copy is equivalent.
            if not dest.is_dir():
                raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest_root

"""The bottom layer: where colocate's files are (``data_files``, the data under ``data/``), dist/'s
layout, safe and go-yaml-compatible YAML, the TOML writer, the compiled store, kubeconform's schema
cache, the vendored trees and the ``go install`` of pinned tools. Nothing here imports a layer above."""

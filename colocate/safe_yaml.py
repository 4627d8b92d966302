"""Safe YAML with libyaml's parser: it reads the documents PyYAML's SafeLoader reads, in a tenth
of the time. dist/ is megabytes (the charts' CRDs): the pure-Python loader takes about 7 s for it."""
from __future__ import annotations

from typing import Any, Iterator

import yaml

#: libyaml's safe loader when PyYAML was built with it (the wheels are), else the pure-Python one.
SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(stream) -> Any:
    return yaml.load(stream, Loader=SafeLoader)


def load_all(stream) -> Iterator[Any]:
    return yaml.load_all(stream, Loader=SafeLoader)

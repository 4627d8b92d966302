"""YAML files read as data and validated against a JSON Schema, with errors a person can act on:
the file, the key's JSON path, a did-you-mean. colocate.yaml, job files, scenarios and rule
files are all read this way."""
from __future__ import annotations

import difflib
import errno
import functools
import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    import jsonschema

from colocate.base import safe_yaml
from colocate.errors import InputError


def json_path(parts) -> str:
    """``['gitops', 'repoURL']`` -> ``$.gitops.repoURL``; list indexes as ``[0]``."""
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


class _DuplicateKey(yaml.MarkedYAMLError):
    """A mapping that names a key twice: YAML forbids it, PyYAML lets the last one win."""


class _Loader(safe_yaml.SafeLoader):  # type: ignore[misc,valid-type]
    """Safe YAML (libyaml: check reads some 50 rule files per run) that refuses a duplicate key:
    a job file that shows ``gpus: 0`` first must not quietly ask for the later ``gpus: 12``."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[tuple[str, str], int] = {}
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    key = (key_node.tag, key_node.value)
                    line = key_node.start_mark.line + 1
                    if key in seen:
                        raise _DuplicateKey(problem=f"key {key_node.value!r} appears twice (lines {seen[key]} and "
                                                    f"{line}): the last one would win; keep one",
                                            problem_mark=key_node.start_mark)
                    seen[key] = line
        return super().construct_mapping(node, deep)


_LOADER = _Loader


class _NotDecimal(yaml.MarkedYAMLError):
    """A number YAML 1.1 reads in a way a reader of the file would not: ``010`` is 8."""


_DECIMAL = re.compile(r"[-+]?(0|[1-9][0-9]*)?(\.[0-9]*)?([eE][-+]?[0-9]+)?\Z")


class _DecimalLoader(_Loader):
    """:class:`_Loader` that refuses the numbers only YAML 1.1 (PyYAML's, not the YAML 1.2 of most
    editors and of Kubernetes' Go parser) reads as such: ``010`` (octal, 8), ``0x10`` (16),
    ``0b10`` (2), ``1:00`` (base 60, 60), ``1_0`` (10). A job file's ``replicas: 010`` must not
    quietly ask for 8."""

    def _decimal(self, node, construct):
        value = construct(self, node)
        text = node.value
        if not _DECIMAL.match(text) and text.lower().lstrip("+-.") not in ("inf", "nan"):
            kind = ("base 60" if ":" in text else "hexadecimal" if "x" in text.lower() else "binary"
                    if "b" in text.lower() else "octal" if text.lstrip("+-").startswith("0") and "_" not in text
                    else "a number with '_'")
            raise _NotDecimal(problem=f"{text} is {kind} in YAML 1.1 and reads as {value!r}: write the decimal "
                                      f"number you mean (without a leading zero, ':' or '_'), or quote a string",
                              problem_mark=node.start_mark)
        return value

    def _int(self, node):
        return self._decimal(node, yaml.SafeLoader.construct_yaml_int)

    def _float(self, node):
        return self._decimal(node, yaml.SafeLoader.construct_yaml_float)


_DecimalLoader.add_constructor("tag:yaml.org,2002:int", _DecimalLoader._int)
_DecimalLoader.add_constructor("tag:yaml.org,2002:float", _DecimalLoader._float)


def load_yaml_file(path: Path, name: str | None = None, decimal: bool = False) -> object:
    """Parse one YAML document; a syntax error names the file (``name``, default the path) and line.
    ``decimal``: numbers only YAML 1.1 reads as such (``010`` is 8) are refused (_DecimalLoader)."""
    name = name or str(path)
    try:
        # A FIFO or a device would block the read for ever, or never end.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError(name, "", "not a regular file")
        return yaml.load(path.read_text(), Loader=_DecimalLoader if decimal else _LOADER)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError(name, "", "broken symbolic link") from None
        raise InputError(name, "", "file not found") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(name, "", "symbolic link loop") from None
        raise InputError(name, "", f"cannot read the file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(name, "", f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f"{mark.line + 1}" if mark else ""
        if isinstance(exc, (_DuplicateKey, _NotDecimal)):
            raise InputError(name, line, exc.problem) from None
        raise InputError(name, line, f"not valid YAML: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise InputError(name, "", f"not valid YAML: {exc}") from None


def validate(data: object, schema: dict, file: str) -> None:
    """Raise InputError listing every schema violation (unknown keys first, with a did-you-mean),
    each with its JSON path and, where the schema explains a form (``errorMessage``, the
    ajv-errors keyword, else ``description``), that explanation instead of a regular expression."""
    validator = _validator_class()(schema)
    errors = sorted(validator.iter_errors(data),
                    key=lambda e: (e.validator != "additionalProperties", list(map(str, e.absolute_path)), e.message))
    if not errors:
        return
    lines = list(dict.fromkeys(f"{json_path(e.absolute_path)}: {_in_words(e, validator)}" for e in errors))
    first, _, message = lines[0].partition(": ")
    rest = "".join(f"\n  {file}:{line}" for line in lines[1:])
    raise InputError(file, first, message + rest)


@functools.cache
def _validator_class():
    """Draft 2020-12 as the schemas mean it, where Python's reading differs:

    - ``pattern``: the schemas' dialect is ECMA-262, whose ``$`` matches only at the end of the
      string; Python's also matches before a final newline, so ``^[a-z]+$`` took ``"argocd\\n"``.
      An unescaped ``$`` is read as ``\\Z`` (jsonschema matches with ``re.search``).
    - ``integer``: a whole number written as an integer. jsonschema counts ``10.0`` as one, and
      ``pauseLeadMinutes: 10.0`` then wrote the cron schedule ``50.0 7.0 * * *``.
    """
    import jsonschema  # here: `colocate check` answered from its cache validates nothing

    def pattern(validator, value, instance, schema):
        if validator.is_type(instance, "string") and not _ecma_pattern(value).search(instance):
            yield jsonschema.ValidationError(f"{instance!r} does not match {value!r}")

    base = jsonschema.Draft202012Validator
    types = base.TYPE_CHECKER.redefine("integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool))
    return jsonschema.validators.extend(base, {"pattern": pattern}, type_checker=types)


@functools.cache
def _ecma_pattern(pattern: str) -> re.Pattern:
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", pattern))


#: Control characters (Unicode category Cc: C0, DEL, C1), newlines and tabs included: no value of
#: colocate.yaml is text of more than one line, and each lands in file names, YAML, TOML or logs.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def refuse_control_characters(data: object, file: str, path: str = "$") -> None:
    """InputError naming the key of the first key or value holding a control character."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}"
            if isinstance(key, str) and _CONTROL.search(key):
                raise InputError(file, path, f"the key {key!r} holds a control character "
                                 f"(U+{ord(_CONTROL.search(key).group()):04X}); remove it")
            refuse_control_characters(value, file, where)
    elif isinstance(data, list):
        for i, item in enumerate(data):
            refuse_control_characters(item, file, f"{path}[{i}]")
    elif isinstance(data, str) and _CONTROL.search(data):
        char = _CONTROL.search(data).group()
        raise InputError(file, path, f"{data!r} holds a control character (U+{ord(char):04X}"
                         f"{', a new line: a YAML block scalar (|) ends with one' if char == chr(10) else ''}); "
                         "write the value on one line, without it")


#: Keywords whose own message shows a regular expression or a sub-schema instead of words.
_FORM_KEYWORDS = ("pattern", "anyOf", "oneOf", "not")


#: What a YAML 1.1 boolean most likely was before the parser read it (for the quote-it hint).
_YAML_WORDS = {True: "yes", False: "no"}


def _in_words(error: jsonschema.ValidationError, validator: jsonschema.Draft202012Validator) -> str:
    """One schema error as a person can act on it: unknown keys and enum values with a
    did-you-mean, an empty file said so, a value of the wrong form explained in words with,
    where one is close, the valid value it was probably meant to be."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(schema.get("properties") or {})
        hints = [f"{key!r}{_did_you_mean(str(key), known)}" for key in error.instance if key not in known]
        return f"unknown key {', '.join(hints)}; known keys: {', '.join(known)}"
    if error.validator == "type" and not error.absolute_path and not isinstance(error.instance, dict):
        needs = ", ".join(schema.get("required") or ())
        what = "the file is empty" if error.instance is None else f"the file holds a {type(error.instance).__name__}"
        return f"{what}; it must map keys to values" + (f", at least {needs}" if needs else "")
    if error.validator == "enum":
        return f"{error.instance!r} is not one of {', '.join(map(str, schema['enum']))}" + _did_you_mean(
            str(error.instance), [str(v) for v in schema["enum"]])
    if error.validator == "type":
        hint = ""
        if isinstance(error.instance, bool) and "string" in str(schema.get("type")):
            hint = ("; YAML reads yes, no, on, off, true and false as booleans: quote it "
                    f"('{_YAML_WORDS.get(error.instance, str(error.instance).lower())}')")
        return error.message + hint + _close(error, validator, _retyped(error.instance))
    # ajv-errors' errorMessage: one text for the value's form, or one per failing keyword.
    explained = schema.get("errorMessage")
    if isinstance(explained, dict):
        explained = explained.get(error.validator)
    elif error.validator not in _FORM_KEYWORDS:
        explained = None
    if explained is None and error.validator in _FORM_KEYWORDS and "description" in schema:
        explained = f"is not of the expected form: {schema['description']}"
    if explained is None:
        return error.message
    return f"{error.instance!r} {explained}" + _close(error, validator, _respelt(error.instance))


def _did_you_mean(word: str, known: list[str]) -> str:
    folded = {k.lower(): k for k in known}
    close = folded.get(word.lower()) or next(iter(difflib.get_close_matches(word, known, n=1, cutoff=0.6)), None)
    return f" (did you mean {close!r}?)" if close else ""


def _close(error: jsonschema.ValidationError, validator: jsonschema.Draft202012Validator, candidates: list) -> str:
    """``; did you mean X?`` for the first candidate the failing (sub)schema accepts, else nothing."""
    check = validator.evolve(schema=error.schema)
    close = next((c for c in candidates if c != error.instance and check.is_valid(c)), None)
    if close is None:
        return ""
    return f"; did you mean {close!r}?" if isinstance(close, str) else f"; did you mean {json.dumps(close)}?"


def _retyped(value: object) -> list[object]:
    """A quoted number or boolean unquoted (replicas: "3"), one value as a one-item list."""
    out: list[object] = [[value]]
    if isinstance(value, str):
        try:
            out.insert(0, safe_yaml.load(value))
        except yaml.YAMLError:
            pass
    return out


def _respelt(value: object) -> list[object]:
    """Slips of the hand in a text value: spaces, upper case, a size in decimal or lower-case
    units meant as the binary unit (4GB, 4G, 4gi, 500m of memory -> 4Gi, 500Mi)."""
    if not isinstance(value, str):
        return []
    text = "".join(value.split())
    size = re.fullmatch(r"([0-9]+)([kKmMgGtT])[iI]?[bB]?", text)
    return [text, text.lower(), *([f"{size[1]}{size[2].upper()}i"] if size else [])]

"""The one escaping of untrusted text that every command's output goes through (check, diff,
capacity, report, offline, and the error line every command ends with): names, labels and values
that come from manifests, git, a Prometheus or an API server reach a terminal, a CI log and a
pull-request comment without moving the cursor, clearing the screen or starting a GitHub
workflow command."""
from __future__ import annotations

import html
import unicodedata


def escape(text: str) -> str:
    """An untrusted string made safe for a terminal and a CI log: every control and format
    character (ESC, BEL, new lines, bidi overrides, zero-width) as a ``\\xNN``/``\\uNNNN``
    escape, and a leading ``::`` (a GitHub Actions workflow command, which the runner
    recognises at the start of a line) with its first colon escaped."""
    text = str(text)
    # str.isprintable() is False for every Cc and Cf character and for U+2028/U+2029 (and some
    # that stay as they are below): the per-character pass only for text that holds one.
    out = text if text.isprintable() else "".join(
        ch if unicodedata.category(ch) not in ("Cc", "Cf") and ch not in "\u2028\u2029" else
        (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}") for ch in text)
    stripped = out.lstrip()
    if stripped.startswith("::"):
        out = out[:len(out) - len(stripped)] + "\\x3a" + stripped[1:]
    return out


def escape_lines(lines: list[str]) -> list[str]:
    """Each line of a command's text output escaped; a line we start with new lines (a blank line
    before a section) keeps them. A value's own new line is escaped, so it cannot start a line."""
    out = []
    for line in lines:
        body = line.lstrip("\n")
        out.append(line[:len(line) - len(body)] + escape(body))
    return out


def markdown(text: str) -> str:
    """Untrusted text for Markdown outside a code span (a table cell, a list item, an HTML
    ``<summary>``): escaped as above, its HTML inert, and ``|`` kept from ending a table cell."""
    return html.escape(escape(text), quote=False).replace("|", "\\|")


def code_span(text: str) -> str:
    """Untrusted text as a Markdown code span: escaped as above; a backquote, which would end
    the span, as a quote."""
    return "`" + escape(text).replace("`", "'") + "`"

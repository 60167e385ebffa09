"""Text from outside, made safe to print on a terminal.

A log line can carry ANSI and OSC escape sequences (colours, a rewritten window title, a
clickable link to anywhere), and a file name can carry a newline that forges a report line. So
every string from input is printed with its control characters escaped (`\\x1b`, `\\n`), and
the presenters add their own colours and line breaks only after that.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import BaseModel

# C0 controls but tab, DEL, and the C1 controls (which some terminals honour as ESC sequences).
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def escape_controls(text: str) -> str:
    """`text` with every control character shown as an escape, so it prints as one inert line."""
    return _CONTROL.sub(_escape, text)


def printable_data(value: Any) -> Any:
    if isinstance(value, str):
        return escape_controls(value)
    if isinstance(value, dict):
        return {key: printable_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [printable_data(item) for item in value]
    return value


ModelT = TypeVar("ModelT", bound=BaseModel)


def printable_model(model: ModelT) -> ModelT:
    """A copy of a pydantic model whose strings print as inert single lines."""
    return type(model).model_validate(printable_data(model.model_dump(mode="json")))

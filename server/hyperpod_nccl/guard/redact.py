"""Secret redaction, applied once at the boundary where data leaves the process.

Analyzers never redact; every presenter (text, JSON, MCP output, escalation bundle) passes its
data through `redact_text` / `redact_data` / `redact_model`, so no analyzer can forget.
"""

from __future__ import annotations

import io
import re
import sys
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel

MASK = "[REDACTED]"

# (pattern, replacement). Order matters: the most specific forms go first.
_RULES: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL),
        f"-----BEGIN PRIVATE KEY-----{MASK}-----END PRIVATE KEY-----",
    ),
    (re.compile(r"\b(AKIA|ASIA|AROA|AIDA)[A-Z0-9]{16}\b"), MASK),
    # PEM body lines read one by one, as log readers do, behind a label or timestamp or not:
    # a DER key's first line starts with "MII"; later lines are 64 base64 characters (not hex).
    (re.compile(r"(?m)(^|[\s:])MII[A-Za-z0-9+/]{36,}={0,2}(?=\s*$)"), rf"\1{MASK}"),
    (re.compile(r"(?m)(^|[\s:])(?=[A-Za-z0-9+/]{0,63}[G-Zg-z+/])[A-Za-z0-9+/]{64}(?=\s*$)"), rf"\1{MASK}"),
    # STS session tokens have no name next to them in a debug trace, but a fixed opening.
    (re.compile(r"\b(?:IQoJb3JpZ2lu|FwoGZXIvYXdz)[A-Za-z0-9/+=]{16,}"), MASK),
    (re.compile(r"(?i)(\bwandb\s+login\s+(?:--?[a-z-]+\s+)*)[A-Za-z0-9_-]{32,}"), rf"\1{MASK}"),
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), MASK),
    (re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"), MASK),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"), MASK),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b"), MASK),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b"), MASK),  # JWT
    (re.compile(r"\bk8s-aws-v1\.[A-Za-z0-9_-]+"), MASK),  # EKS bearer token
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {MASK}"),
    # NAME=value / NAME: value where NAME says it holds a secret (env dumps, configs, URLs).
    (
        re.compile(
            r"(?i)\b([A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|SESSION_?KEY|"
            r"CREDENTIALS?|PRIVATE_?KEY|WANDB_API_KEY)[A-Z0-9_]*)(\s*[=:]\s*|\"\s*:\s*\")"
            r"(?!\[REDACTED\])([^\s\"',;&]+)"
        ),
        rf"\1\2{MASK}",
    ),
    (
        re.compile(r"(?i)(?<![\w-])(--?(?:password|token|secret|api-key))(\s+|=)(?!\[REDACTED\])\S+"),
        rf"\1\2{MASK}",
    ),
    (re.compile(r"(?i)(://[^/\s:@]+:)[^@\s/]+(@)"), rf"\1{MASK}\2"),  # user:password@host
    (re.compile(r"(?i)(X-Amz-(?:Security-Token|Signature|Credential)=)[^&\s]+"), rf"\1{MASK}"),
]

# A bare 40-character AWS secret key has no prefix; catch it only next to its usual names.
_AWS_SECRET_VALUE = re.compile(r"(?i)(aws_secret_access_key|secretaccesskey)(\W{1,4})[A-Za-z0-9/+=]{40}")


def redact_text(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return _AWS_SECRET_VALUE.sub(rf"\1\2{MASK}", text)


def redact_data(value: Any) -> Any:
    """Redact every string inside JSON-like data (dicts, lists, strings)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        if _is_secret_env_entry(value):
            return {**redact_data({k: v for k, v in value.items() if k != "value"}), "value": MASK}
        return {key: _redact_mapping_value(key, item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_data(item) for item in value]
    return value


_SECRET_KEY_NAME = re.compile(
    r"(?i)(secret|token|password|passwd|api_?key|access_?key|private_?key|credential)"
)


def _is_secret_env_entry(value: dict[Any, Any]) -> bool:
    # A pod spec's env is a list of {"name": ..., "value": ...}: the name is not the dict key.
    name, secret = value.get("name"), value.get("value")
    return (
        isinstance(name, str)
        and isinstance(secret, str)
        and bool(secret)
        and bool(_SECRET_KEY_NAME.search(name))
    )


def _redact_mapping_value(key: Any, value: Any) -> Any:
    # An env var or config entry whose name says "secret" is masked whatever its value looks like.
    if isinstance(key, str) and isinstance(value, str) and value and _SECRET_KEY_NAME.search(key):
        return MASK
    return redact_data(value)


ModelT = TypeVar("ModelT", bound=BaseModel)


def redact_model(model: ModelT) -> ModelT:
    """A copy of a pydantic model with every string field redacted."""
    return type(model).model_validate(redact_data(model.model_dump(mode="json")))


class RedactingStream(io.TextIOBase):
    """A text stream (stderr) whose every line passes `redact_text` before it is written.

    Installed for the whole process by `redact_stderr`, so a traceback, a warning or a log
    record that quotes a token prints it masked, whoever wrote it."""

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self._target = target
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            complete, self._pending = self._pending.rsplit("\n", 1)
            self._target.write(redact_text(complete + "\n"))
        if len(self._pending) > 65536:  # a progress line rewritten in place never ends with \n
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._target.write(redact_text(self._pending))
            self._pending = ""
        self._target.flush()

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", "utf-8")

    def writable(self) -> bool:
        return True


def redact_stderr() -> None:
    """Route sys.stderr (tracebacks, warnings, every logging handler made after this) through redaction."""
    if not isinstance(sys.stderr, RedactingStream) and sys.stderr is not None:
        sys.stderr = RedactingStream(sys.stderr)

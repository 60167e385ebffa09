"""Secret redaction, applied once at the boundary where data leaves the process.

Analyzers never redact; every presenter (text, JSON, MCP output, escalation bundle) passes its
data through `redact_text` / `redact_data` / `redact_model`, so no analyzer can forget.
"""

from __future__ import annotations

import io
import math
import re
import sys
from collections import Counter
from functools import lru_cache
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel

MASK = "[REDACTED]"

# Names that say a value is secret (env dumps, configs, JSON, YAML, Python reprs, flags).
_SECRET_WORDS = (
    r"secret|token|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|session[_-]?key|credentials?|"
    r"private[_-]?key|auth[_-]?key|account[_-]?key|client[_-]?key|signing[_-]?key|secret[_-]?key"
)
# Bounded repeats, and lookbehinds that start a name only at a name's start: an unbounded `*` on
# both sides of the keyword backtracked quadratically over a 70 KB run of letters.
_SECRET_NAME = rf"[A-Za-z0-9_.-]{{0,64}}(?:{_SECRET_WORDS})[A-Za-z0-9_.-]{{0,64}}"
# Names that may hold a secret; their value is masked when it looks random (high entropy).
_FLAG_WORDS = _SECRET_WORDS.replace("[_-]", "-")
_MAYBE_SECRET_NAME = r"[A-Za-z0-9_.-]{0,64}(?:key|pass|auth|cred|sig|salt|cookie|session)[A-Za-z0-9_.-]{0,64}"
_ENTROPY_BITS = 3.5
_ENTROPY_MIN_CHARS = 16


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _mask_assignment(match: re.Match[str]) -> str:
    """NAME=value, NAME: 'value', "NAME": "value", {'name': 'value'}: the value masked, quotes kept."""
    single, double = match.group("single"), match.group("double")
    quote = "'" if single is not None else '"' if double is not None else ""
    value = single if single is not None else double if double is not None else match.group("bare")
    if not value or value == MASK or _error_code_then_prose(match):
        return match.group(0)
    return f"{match.group('name')}{match.group('sep')}{quote}{MASK}{quote}"


_ERROR_CODE = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]*)+")
_PROSE_WORD = re.compile(r"[A-Z][a-z]{0,11}")


def _error_code_then_prose(match: re.Match[str]) -> bool:
    """`InvalidClientTokenId: The security token …`: an AWS error code and its message, not a secret."""
    return (
        ":" in match.group("sep")
        and bool(_ERROR_CODE.fullmatch(match.group("name")))
        and bool(_PROSE_WORD.fullmatch(match.group("bare") or ""))
    )


def _mask_random_assignment(match: re.Match[str]) -> str:
    value = match.group("value")
    random = len(value) >= _ENTROPY_MIN_CHARS and _entropy(value) >= _ENTROPY_BITS
    return (
        f"{match.group('name')}{match.group('sep')}{MASK}" if random and MASK not in value else match.group(0)
    )


def _mask_url_password(match: re.Match[str]) -> str:
    # `host:8080/path@x` is a port and a path, not a password.
    password = match.group("password")
    if re.fullmatch(r"\d{1,5}(/.*)?", password) or password == MASK:
        return match.group(0)
    return f"{match.group('user')}{MASK}@"


_ASSIGNMENT = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.-])(?P<name>{_SECRET_NAME})(?P<sep>['\"]?\s*[=:]\s*)"
    r"(?:'(?P<single>[^'\n]*)'|\"(?P<double>[^\"\n]*)\"|(?P<bare>(?!\[REDACTED\])[^\s'\",;&}\]]+))"
)

# (pattern, replacement). Order matters: the most specific forms go first.
_RULES: list[tuple[re.Pattern[str], Any]] = [
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL),
        f"-----BEGIN PRIVATE KEY-----{MASK}-----END PRIVATE KEY-----",
    ),
    (re.compile(r"\b(AKIA|ASIA|AROA|AIDA)[A-Z0-9]{16}\b"), MASK),
    # PEM and OpenSSH body lines read one by one (a tail may have cut the BEGIN line), behind a
    # label or timestamp or not: a DER key starts "MII", an OpenSSH key "b3BlbnNzaC1rZXktdjE"
    # ("openssh-key-v1"); later lines are 64 (PEM) or 70 (OpenSSH) base64 characters, not hex.
    (re.compile(r"(?m)(^|[\s:])(?:MII|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/]{16,}={0,2}(?=\s*$)"), rf"\1{MASK}"),
    (
        re.compile(
            r"(?m)(^|[\s:])(?=[A-Za-z0-9+/]{0,69}[G-Zg-z+/])(?:[A-Za-z0-9+/]{64}|[A-Za-z0-9+/]{70})(?=\s*$)"
        ),
        rf"\1{MASK}",
    ),
    # STS session tokens have no name next to them in a debug trace, but a fixed opening.
    (re.compile(r"\b(?:IQoJb3JpZ2lu|FwoGZXIvYXdz)[A-Za-z0-9/+=]{16,}"), MASK),
    (re.compile(r"(?i)(\bwandb\s+login\s+(?:--?[a-z-]+\s+)*)[A-Za-z0-9_-]{32,}"), rf"\1{MASK}"),
    # Provider token shapes: Hugging Face, GitHub, GitLab, Slack, OpenAI/Anthropic, Stripe, npm,
    # PyPI, Google API keys, SendGrid, a JWT, the EKS bearer token.
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), MASK),
    (re.compile(r"\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}\b"), MASK),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"), MASK),
    (re.compile(r"\bgl(?:pat|dt|rt|ptt|ft|imt|oas|cbt)-[A-Za-z0-9_-]{20,}"), MASK),
    (re.compile(r"\bxox[abeprs]-[A-Za-z0-9-]{10,}\b"), MASK),
    (re.compile(r"(?i)https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]+"), MASK),
    (re.compile(r"\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), MASK),
    (re.compile(r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}\b"), MASK),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), MASK),
    (re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}"), MASK),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), MASK),
    (re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"), MASK),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b"), MASK),  # JWT
    (re.compile(r"\bk8s-aws-v1\.[A-Za-z0-9_-]+"), MASK),  # EKS bearer token
    (re.compile(r"(?i)\b(bearer|basic)\s+(?!\[REDACTED\])[A-Za-z0-9._~+/=-]{8,}"), rf"\1 {MASK}"),
    # NAME=value in every quoting style, where NAME says it holds a secret.
    (_ASSIGNMENT, _mask_assignment),
    (
        re.compile(
            rf"(?i)(?<![A-Za-z0-9_.-])(?P<name>{_MAYBE_SECRET_NAME})(?P<sep>['\"]?\s*[=:]\s*['\"]?)"
            r"(?P<value>[A-Za-z0-9+/=_.~-]{16,})"
        ),
        _mask_random_assignment,
    ),
    (
        re.compile(
            rf"(?i)(?<![\w-])(--?[a-z0-9-]{{0,64}}(?:{_FLAG_WORDS})[a-z0-9-]{{0,64}})(\s+|=)"
            r"(?!\[REDACTED\])(?!-)\S+"
        ),
        rf"\1\2{MASK}",
    ),
    # user:password@host, the user possibly empty, the password possibly holding a slash.
    (
        re.compile(
            r"(?i)(?<![a-z0-9+.-])(?P<user>[a-z][a-z0-9+.-]{0,31}://[^/\s:@]{0,256}:)(?P<password>[^@\s]{1,256})@"
        ),
        _mask_url_password,
    ),
    # .netrc: `machine HOST login USER password PASS`, on one line or a password on its own.
    (
        re.compile(r"(?i)(\bmachine\s+\S+\s+(?:login\s+\S+\s+)?(?:password|passwd)\s+)(?!\[REDACTED\])\S+"),
        rf"\1{MASK}",
    ),
    (re.compile(r"(?im)^(\s*(?:password|passwd)\s+)(?!\[REDACTED\])\S+(?=\s*$)"), rf"\1{MASK}"),
    (re.compile(r"(?i)(X-Amz-(?:Security-Token|Signature|Credential)=|[?&]sig=)[^&\s]+"), rf"\1{MASK}"),
]

# A bare 40-character AWS secret key has no prefix; catch it only next to its usual names.
_AWS_SECRET_VALUE = re.compile(r"(?i)(aws_secret_access_key|secretaccesskey)(\W{1,4})[A-Za-z0-9/+=]{40}")


_REMEMBERED_CHARS = 2048  # a report's strings are short and redacted again at every budget cut


def redact_text(text: str) -> str:
    return _redact_remembered(text) if len(text) <= _REMEMBERED_CHARS else _redact(text)


def _redact(text: str) -> str:
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return _AWS_SECRET_VALUE.sub(rf"\1\2{MASK}", text)


_redact_remembered = lru_cache(maxsize=8192)(_redact)


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

"""Redaction by construction: every quoting style of key=value, URL userinfo, provider token
shapes, PEM and OpenSSH bodies, high-entropy values under secret-looking names; stderr and
logging pass through it; redacting twice changes nothing; and whatever detect-secrets' provider
detectors find in a line, the hand-written rules mask too."""

from __future__ import annotations

import subprocess
import sys

import pytest
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import transient_settings

from hyperpod_nccl.guard.redact import MASK, redact_text
from tests.skill import secrets

# (line, the secret in it)
FORMS = {
    "single-quoted env": (
        "WANDB_API_KEY='0123456789abcdef0123456789abcdef01234567'",
        "0123456789abcdef01234",
    ),
    "python dict": ("{'password': 'Hunter2PlantedPw!'}", "Hunter2PlantedPw!"),
    "double-quoted with spaces": ('password = "correct horse battery"', "correct horse battery"),
    "yaml": ("  client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ", "LS0tLS1CRUdJTiBSU0Eg"),
    "url password with slash": ("https://u:pa/ss@host/x", "pa/ss"),
    "url empty user": ("redis://:hunter2pw@cache:6379/0", "hunter2pw"),
    "openai": ("key sk-proj-abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz0"),
    "anthropic": ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnopqrstuvwxyz0"),
    "gitlab": ("glpat-abcdefghijklmnopqrst", "abcdefghijklmnopqrst"),
    "azure": (
        "AccountName=x;AccountKey=abcdEFGH0123456789abcdEFGH0123456789abcd==;EndpointSuffix=x",
        "abcdEFGH0123",
    ),
    "basic auth": ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA"),
    "slack webhook": ("https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX", "XXXXXXXXXXXXXXXX"),
    "netrc one line": ("machine github.com login me password s3cr3tpass", "s3cr3tpass"),
    "netrc own line": ("    password s3cr3tpass", "s3cr3tpass"),
    "secret-key flag": ("aws configure set --secret-key abcSECRETvalue", "abcSECRETvalue"),
    "aws-secret-access-key flag": ("--aws-secret-access-key=abcSECRETvalue", "abcSECRETvalue"),
    "high entropy under a key name": ("DB_PASS=x8Kq2Lm9Zp4Rt7Vw1Ny6", "x8Kq2Lm9Zp4Rt7Vw1Ny6"),
    "openssh first body line": (
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
        "b3BlbnNz",
    ),
    "sas signature": ("https://acct.blob.core.windows.net/c?sv=2022&sig=abcDEF%2Bghi123", "abcDEF%2Bghi123"),
    "stripe": ("sk_live_abcdefghijklmnop0123", "abcdefghijklmnop0123"),
}


@pytest.mark.parametrize("form", FORMS, ids=str)
def test_each_form_is_masked_and_redacting_again_changes_nothing(form: str) -> None:
    line, secret = FORMS[form]
    once = redact_text(line)
    assert secret not in once and MASK in once, once
    assert redact_text(once) == once


@pytest.mark.parametrize(
    "line",
    [
        "NCCL INFO comm 0x55d1 rank 3 nranks 64 cudaDev 3 busId 53000 commId 0xMII1234 - Init COMPLETE",
        "image: repo/img@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "https://registry.internal:5000/v2/img/manifests/latest",
        "password authentication failed for user trainer",
        "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
        "cache_key=abc123",
    ],
)
def test_ordinary_lines_keep_their_evidence(line: str) -> None:
    assert redact_text(line) == line


PROVIDER_PLUGINS = [
    {"name": name}
    for name in (
        "AWSKeyDetector",
        "AzureStorageKeyDetector",
        "BasicAuthDetector",
        "GitHubTokenDetector",
        "GitLabTokenDetector",
        "JwtTokenDetector",
        "NpmDetector",
        "OpenAIDetector",
        "PrivateKeyDetector",
        "PypiTokenDetector",
        "SendGridDetector",
        "SlackDetector",
        "StripeDetector",
    )
]
ORACLE_LINES = [
    *secrets.FREE_TEXT_LINES,
    *(line for line, _ in FORMS.values()),
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAACJXsicGVybWlzc2lvbnMiOiAidXNlciJ9",
    "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
    "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]


@pytest.mark.parametrize("line", ORACLE_LINES, ids=lambda line: line[:30])
def test_what_detect_secrets_provider_detectors_find_is_masked(line: str) -> None:
    with transient_settings({"plugins_used": PROVIDER_PLUGINS}):
        found = [secret.secret_value for secret in scan_line(line) if secret.secret_value]
    redacted = redact_text(line)
    for value in found:
        assert value not in redacted or len(value) < 8, (value, redacted)


def test_a_traceback_and_a_log_record_on_stderr_are_redacted() -> None:
    program = (
        "import logging, sys\n"
        "from hyperpod_nccl.guard.redact import redact_stderr\n"
        "redact_stderr()\n"
        "logging.basicConfig()\n"
        f"logging.getLogger('x').warning('retrying with %s', 'Bearer {secrets.BEARER}')\n"
        f"raise RuntimeError('could not use {secrets.TRACEBACK_TOKEN}')\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert "Traceback" in done.stderr and "retrying with" in done.stderr
    assert secrets.leaks(done.stderr) == [] and MASK in done.stderr


def test_the_cli_prints_a_crash_in_one_redacted_line_and_exits_2(tmp_path) -> None:
    report = tmp_path / "r.json"
    report.write_text('{"kind": "triage", "summary": {"issues_found": "' + secrets.GITHUB_TOKEN + '"}}')
    done = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "compare", str(report), str(report)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and secrets.leaks(done.stderr) == []

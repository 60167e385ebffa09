from __future__ import annotations

import pytest

from hyperpod_nccl.guard.redact import MASK, redact_data, redact_text

SECRETS = {
    "aws access key": ("key AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
    "aws secret": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "session token env": ("AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEXAMPLETOKEN", "IQoJb3JpZ2luX2VjEXAMPLETOKEN"),
    "bearer": ("Authorization: Bearer abcdef0123456789ghij", "abcdef0123456789ghij"),
    "hugging face": (
        "HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    ),
    "wandb": (
        "WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567",
        "0123456789abcdef0123456789abcdef01234567",
    ),
    "github": ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    "password flag": ("mysql --password hunter2secret", "hunter2secret"),
    "url credentials": ("s3://user:s3cr3tpass@host/path", "s3cr3tpass"),
    "private key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA",
    ),
    "eks token": ("k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8", "aHR0cHM6Ly9zdHMuYW1hem9uYXdz"),
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_secret_is_masked(name: str) -> None:
    text, secret = SECRETS[name]
    redacted = redact_text(text)
    assert secret not in redacted
    assert MASK in redacted


def test_ordinary_log_lines_are_untouched() -> None:
    line = (
        "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
        "Timeout(ms)=600000) ran for 600020 milliseconds before timing out."
    )
    assert redact_text(line) == line
    assert redact_text("commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39").startswith("commit 3f2a")


def test_env_mappings_mask_secret_names_whatever_the_value() -> None:
    env = {"NCCL_DEBUG": "INFO", "MY_DB_PASSWORD": "x", "nested": [{"API_KEY": "short"}]}
    assert redact_data(env) == {"NCCL_DEBUG": "INFO", "MY_DB_PASSWORD": MASK, "nested": [{"API_KEY": MASK}]}

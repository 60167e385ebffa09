"""Planted secrets: realistic values in the places they really turn up (env dumps, `set -x`
traces, URLs, headers, JSON, CLI flags, PEM blocks). Every value is unique, so finding one in an
output means that output leaked it."""

from __future__ import annotations

from typing import Any

ACCESS_KEY_ID = "AKIAZQ3DPLANTEDKEY77"
SECRET_ACCESS_KEY = "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"
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEPLANTEDsessionTOKEN0aCXVzLXdlc3QtMiJHMEUCIQDx7y+planted/Ab=="
BEARER = "PlantedBearer0aZ9xYtokenValue1234"
PASSWORD = "Hunter2PlantedPw!"
HF_TOKEN = "hf_PlantedHuggingFaceToken0123456789AbCd"
WANDB_KEY = "0123456789abcdefplanted0wandb0key0000000"[:40]
GITHUB_TOKEN = "ghp_PlantedGitHubToken0123456789abcdefABCD"
PEM_BODY = "MIIEpAIBAAKCAQEAplantedPEMbodyLine0123456789abcdefghij"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nc2Vjb25kbGluZXBsYW50ZWQ=\n-----END RSA PRIVATE KEY-----"
# The forms the hostile-input review found leaking (issue 10).
QUOTED_WANDB = "9f8e7d6c5b4a39281706f5e4d3c2b1a0plantedq"
QUOTED_HF = "hf_PlantedQuotedHuggingFaceToken0123456789"
DICT_PASSWORD = "Dict-Planted-Pw-8812!"
URL_SLASH_PASSWORD = "pl/anted/Pw99"
EMPTY_USER_PASSWORD = "EmptyUserPlantedPw77"
OPENSSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
OPENSSH_LINE = "NTUxOQAAACBQbGFudGVkT3BlblNTSEtleUJvZHlMaW5lVHdvMDEyMzQ1Njc4OUFCQ0RFRk"
OPENAI_KEY = "sk-proj-PlantedOpenAIKey0123456789abcdefABCDEF"
GITLAB_TOKEN = "glpat-PlantedGitLab0123456789"
AZURE_KEY = "PlantedAzureAccountKey0123456789abcdefABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij=="
BASIC_AUTH = "dXNlcjpQbGFudGVkQmFzaWNQYXNz"
SLACK_HOOK = "https://hooks.slack.com/services/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t"
NETRC_PASSWORD = "NetrcPlantedPass42"
SECRET_KEY_FLAG = "FlagPlantedSecretKey0123456789abcd"
TRACEBACK_TOKEN = "ghp_PlantedTracebackToken0123456789abcdEF"

NEEDLES = {
    "AWS access key id": ACCESS_KEY_ID,
    "AWS secret access key": SECRET_ACCESS_KEY,
    "AWS session token": SESSION_TOKEN,
    "bearer token": BEARER,
    "password": PASSWORD,
    "Hugging Face token": HF_TOKEN,
    "W&B API key": WANDB_KEY,
    "GitHub token": GITHUB_TOKEN,
    "PEM private key": PEM_BODY,
    "single-quoted W&B key": QUOTED_WANDB,
    "single-quoted HF token": QUOTED_HF,
    "password in a Python dict": DICT_PASSWORD,
    "URL password with a slash": URL_SLASH_PASSWORD,
    "URL password, empty user": EMPTY_USER_PASSWORD,
    "OpenSSH key body": OPENSSH_BODY,
    "OpenSSH key line": OPENSSH_LINE,
    "OpenAI key": OPENAI_KEY,
    "GitLab token": GITLAB_TOKEN,
    "Azure AccountKey": AZURE_KEY,
    "Basic auth": BASIC_AUTH,
    "Slack webhook": SLACK_HOOK.rsplit("/", 1)[1],
    ".netrc password": NETRC_PASSWORD,
    "--secret-key flag": SECRET_KEY_FLAG,
    "token in a traceback": TRACEBACK_TOKEN,
}

# How the secrets appear in free text: log lines, probe output, CloudWatch messages.
FREE_TEXT_LINES = [
    f"+ export AWS_ACCESS_KEY_ID={ACCESS_KEY_ID}",
    f"+ export AWS_SECRET_ACCESS_KEY={SECRET_ACCESS_KEY}",
    f"aws_secret_access_key = {SECRET_ACCESS_KEY}",
    f"+ export AWS_SESSION_TOKEN={SESSION_TOKEN}",
    f"botocore credentials from env: key {ACCESS_KEY_ID} token {SESSION_TOKEN}",
    f"DEBUG urllib3 send: b'Authorization: Bearer {BEARER}'",
    f"+ python train.py --password {PASSWORD} --resume",
    f"MLFLOW_TRACKING_PASSWORD={PASSWORD}",
    f"connecting to postgresql://trainer:{PASSWORD}@db.internal:5432/runs",
    f"+ export HF_TOKEN={HF_TOKEN}",
    f"Downloading https://huggingface.co/meta/llama with token {HF_TOKEN}",
    f"+ export WANDB_API_KEY={WANDB_KEY}",
    f"+ wandb login {WANDB_KEY}",
    f"+ git clone https://{GITHUB_TOKEN}@github.com/org/trainer.git",
    *PEM.splitlines(),
    f"wandb.login(key=...) with wandb_api_key='{QUOTED_WANDB}'",
    f"HF_TOKEN='{QUOTED_HF}' python train.py",
    f"config: {{'user': 'trainer', 'password': '{DICT_PASSWORD}'}}",
    f"mlflow uri https://trainer:{URL_SLASH_PASSWORD}@mlflow.internal/api",
    f"redis://:{EMPTY_USER_PASSWORD}@cache.internal:6379/0",
    OPENSSH_BODY,  # its BEGIN line was cut off by `tail`
    OPENSSH_LINE,
    f"openai.api_base set; key {OPENAI_KEY}",
    f"git clone https://oauth2:{GITLAB_TOKEN}@gitlab.example.com/ml/train.git",
    f"AZURE_STORAGE=DefaultEndpointsProtocol=https;AccountName=ckpt;AccountKey={AZURE_KEY};EndpointSuffix=core",
    f"DEBUG urllib3 header Authorization: Basic {BASIC_AUTH}",
    f"notify {SLACK_HOOK}",
    f"machine s3.internal login trainer password {NETRC_PASSWORD}",
    f"+ aws configure set --secret-key {SECRET_KEY_FLAG}",
    f'  File "train.py", line 3, in <module>: RuntimeError: bad token {TRACEBACK_TOKEN}',
]
FREE_TEXT = "\n".join(FREE_TEXT_LINES) + "\n"

# How they appear in a pod spec's env: the name says "secret" but the value may not.
POD_ENV: list[dict[str, Any]] = [
    {"name": "AWS_ACCESS_KEY_ID", "value": ACCESS_KEY_ID},
    {"name": "AWS_SECRET_ACCESS_KEY", "value": SECRET_ACCESS_KEY},
    {"name": "AWS_SESSION_TOKEN", "value": SESSION_TOKEN},
    {"name": "API_AUTH_HEADER", "value": f"Bearer {BEARER}"},
    {"name": "DB_PASSWORD", "value": PASSWORD},
    {"name": "HF_TOKEN", "value": HF_TOKEN},
    {"name": "WANDB_API_KEY", "value": WANDB_KEY},
    {"name": "GH_TOKEN", "value": GITHUB_TOKEN},
    {"name": "TLS_KEY", "value": PEM},
    {"name": "TORCH_HUB_TOKEN", "value": PASSWORD},
    {"name": "NCCL_SOCKET_IFNAME", "value": "^lo,docker"},
]


def leaks(text: str | bytes) -> list[str]:
    """The kinds of planted secret present in an output."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return [kind for kind, needle in NEEDLES.items() if needle in text]

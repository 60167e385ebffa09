"""The scanner with its prefilters and dispatcher built: what the MCP server's fork server
preloads, so every worker it forks for a triage starts ready to scan."""

from hyperpod_nccl.triage.scanner import prepare

prepare()

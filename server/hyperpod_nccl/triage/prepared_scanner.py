"""The scanner with its prefilters and dispatcher built, and the line counter's numpy imported:
what the MCP server's fork server preloads, so every worker it forks for a triage starts ready to
scan. (The CLI forks its workers from itself, and imports numpy before forking only for an input big
enough to pay for it.)"""

from hyperpod_nccl.triage.lines import load_line_counter
from hyperpod_nccl.triage.scanner import prepare

prepare()
load_line_counter()

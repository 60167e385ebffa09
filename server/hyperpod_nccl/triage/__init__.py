"""Worker-log triage: stream every rank's log once, rebuild each rank's NCCL state, find the origin.

`hyperpod_nccl.triage.engine.run_triage` is the entry point the CLI and the MCP tool share. Only
`discover`, `scanner` and `lines` touch files; everything after the scan is a pure function over
the events it produced.
"""

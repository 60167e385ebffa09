"""Worker-log triage: stream every rank's log once, rebuild each rank's NCCL state, find the origin.

`hyperpod_nccl.triage.engine.run_triage` is the entry point the CLI and the MCP tool share. Only
`discover`, `scanner` and `lines` touch files. After the scan, `model.build_incident` builds the
incident once (topology, clock, rank states, verdict, an index of events, what was read), every
rule in `rules/` runs over it, and `root_cause` chooses the origin among their candidates.
"""

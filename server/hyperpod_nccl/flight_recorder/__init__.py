"""PyTorch Flight Recorder dumps: read safely, matched across ranks, turned into findings.

reader (the only module that touches files) → model (typed records) → analyze (cross-rank
matching per process group) → findings (what the report says, with the dump file and record id
as evidence and the user-code frame that issued the call).
"""

"""Names of what the product writes and later reads back, in a module that imports nothing, so a
face that only needs to recognise them (log triage refusing a bundle) does not load the models."""

SNAPSHOT_FILE = "snapshot.json"  # a diagnostic's collected data, replayed by `diagnose --bundle`
BUNDLE_FOLDER = "hyperpod-nccl-escalation"  # the top folder inside an escalation bundle

"""Slurm as a first-class orchestrator: state and reason vocabulary, output parsers, and the
auto-resume checks of a job's batch script."""

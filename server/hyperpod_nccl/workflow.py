"""The diagnostic workflow as the MCP server states it to an assistant (instructions and prompt)."""

SERVER_INSTRUCTIONS = """\
hyperpod-nccl diagnoses NCCL and distributed-training failures on GPU clusters (SageMaker
HyperPod on EKS or Slurm, Kubernetes, Slurm). Every tool is read-only. Never run a command that
changes the cluster, a node or a workload: present each fix as a "Suggested command (run this
yourself)" with the real ids filled in, and wait for the user. For every FAIL or WARN, read the
section its `reference` names (read_reference) before suggesting anything. If a finding's
section does not exist, report it as a bug instead of inventing a fix.
"""

DIAGNOSE_WORKFLOW = """\
Diagnose an NCCL / distributed-training failure, read-only.

Cluster: {cluster}   Region: {region}
Error reported by the user: {error}

1. Collect: the cluster name and region, the namespace and job (EKS) or job id (Slurm), the
   exact error string, and where the training logs are.
2. Diagnose: run the diagnostic tools (triage_logs for a log directory; run_diagnostic for a
   live cluster or a saved bundle). The output drives everything else.
3. For every FAIL and WARN, call read_reference with the file and section from its
   `reference` field and read it before saying anything about a fix.
4. Suggest: present the finding, its evidence (file:line, rank, node, instance id), the root
   cause, and each suggested command as "Suggested command (run this yourself)" with its blast
   radius. Never run them. Destructive order: investigate → reboot → replace; replacing a node
   destroys its volumes. Never discard training state on speculation.
5. Rerun the diagnostic after the user acts, and compare with the previous report.
"""

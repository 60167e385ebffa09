"""The diagnostic workflow as the MCP server states it to an assistant (instructions and prompt)."""

SERVER_INSTRUCTIONS = """\
hyperpod-nccl diagnoses NCCL and distributed-training failures on GPU clusters (SageMaker
HyperPod on EKS or Slurm, Kubernetes, Slurm). Every tool is read-only towards every cluster;
create_escalation_bundle (and run_diagnostic with save_bundle) writes one new local file in the
server's output folder. Never run a command that changes the cluster, a node or a workload:
present each fix as a "Suggested command (run this yourself)" with the real ids filled in, and
wait for the user. Kubernetes access is the kubeconfig the server was started with: pick a
context from list_kube_contexts. For every FAIL or WARN, read the
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
   live cluster or a saved bundle; list_kube_contexts, then list_pods / get_pod_logs with a
   `context`, for Kubernetes). The output drives everything else.
3. For every FAIL and WARN, call read_reference with the file and section from its
   `reference` field and read it before saying anything about a fix.
4. Suggest: present the finding, its evidence (file:line, rank, node, instance id), the root
   cause, and each suggested command as "Suggested command (run this yourself)" with its blast
   radius. Never run them. Destructive order: investigate → reboot → replace; replacing a node
   destroys its volumes. Never discard training state on speculation.
5. Rerun the diagnostic after the user acts, and compare with the previous report.
"""

TRIAGE_WORKFLOW = """\
Triage the training logs of a failed or hung distributed job, read-only.

Logs: {log_dir}   Storage daemon logs: {storage_log_dir}
Error reported by the user: {error}

1. Make sure the folder holds every rank's logs (all nodes, all ranks), not one file: the
   rank that caused a hang is usually the one that printed nothing special. The server reads
   only under the folders it was started with; if the folder is refused, ask the user to copy
   the logs there (the refusal names them) or to restart the server with --allow-dir.
2. Call triage_logs on the folder (and the storage logs, if any). Save nothing by hand: the
   result is the report.
3. Read the root cause first: its category, culprit ranks and nodes, and the chain from the
   first trigger to the final crash. Watchdog timeouts on every rank are the symptom, not the
   cause.
4. For every FAIL and WARN, call read_reference with the file and section from its
   `reference`, then explain the finding with its evidence (file:line, rank, node).
5. Present each suggested command as "Suggested command (run this yourself)" with its blast
   radius. Never run them; never discard training state on speculation.
6. After the user acts and the job reruns, triage the new logs and call compare_reports with
   the previous and the new report: say what is fixed, still failing and new.
"""

ESCALATION_WORKFLOW = """\
Prepare an AWS Support escalation, read-only.

Cluster: {cluster}   Region: {region}
Report: {report}

1. Check the criteria. Escalate when the network checks pass (security groups, EFA on-node)
   but NCCL still times out; hardware checks pass on every node but the collective still
   hangs; the diagnostic finds no issue but training still fails; GPU Xid errors persist after
   a node replacement; or rendezvous on a large cluster still hangs after the collective
   timeout was raised and the memlock workaround applied. Otherwise, keep diagnosing.
2. Make sure the latest diagnostic ran on the failing job (run_diagnostic with more sampled
   nodes for an escalation, or triage_logs on every rank's logs).
3. Call create_escalation_bundle with a new file name for output_path (it is written in the
   server's output folder), the report (a file path or the report object), the saved snapshot
   folder if there is one, the log folder, and the cluster, region, namespace and job. It
   writes one new local .tar.gz, redacted, never replaces a file, and changes nothing on the
   cluster.
4. Tell the user where the bundle is, which case items it still lacks (`missing`), and ask
   them to fill those in CASE.md.
5. Give the upload as "Suggested command (run this yourself)": the `upload.command` from the
   result with their bucket filled in. Never upload it yourself. The S3 URI goes in the case.
"""

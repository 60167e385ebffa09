"""The diagnostic workflow as the MCP server states it to an assistant: instructions and prompts.

The prompts are built from what the user already gave: a value the user gave is stated, one they
did not is something to ask for in words, never a `<placeholder>` for the assistant to echo. The
report shape is the one SKILL.md describes (a test keeps the two equal).
"""

from __future__ import annotations

SERVER_INSTRUCTIONS = """\
hyperpod-nccl diagnoses NCCL and distributed-training failures on GPU clusters (SageMaker
HyperPod on EKS or Slurm, Kubernetes, Slurm). Every tool is read-only towards every cluster;
create_escalation_bundle (and run_diagnostic with save_bundle) writes one new local file in the
server's output folder. Never run a command that changes the cluster, a node or a workload:
present each fix as a "Suggested command (run this yourself)" with the real ids filled in, and
wait for the user. With logs on this machine, start with triage_logs: it needs only the folder.
Kubernetes access is the kubeconfig the server was started with: pick a context from
list_kube_contexts. For every FAIL or WARN, read the section its `reference` names
(read_reference) before suggesting anything. If a finding's section does not exist, report it
as a bug instead of inventing a fix.
"""

# The answer to the user, in this order (SKILL.md § "Report shape" lists the same six).
REPORT_SHAPE = (
    ("What happened", "the root cause in one sentence: category, culprit ranks and nodes, confidence"),
    (
        "Is this your job?",
        "job id, nodes, world size and dates from the report next to what the user described; say "
        "plainly when they differ",
    ),
    ("Evidence", "the decisive lines as file:line, with rank, node and instance id"),
    ("Chain", "trigger → consequences → final crash, with times (say which are derived or zone-less)"),
    ("Ruled out and not checked", "what the report excluded, the inputs it skipped, unconfirmed issues"),
    (
        "Suggested commands",
        'each as "Suggested command (run this yourself)" with its blast radius; never run them',
    ),
)

_RERUN = """\
After the user acts, run the same diagnostic again and call compare_reports with the report from
before and the new one. Only `fixed` issues are fixed. `unconfirmed` issues were not seen but could
not have been (another job, other nodes, an input kind the rerun lacked): say so, with the
reason, and what to rerun with. A verdict of `inconclusive` or `not_comparable` is never "fixed".
"""


def report_shape(bold: bool = False) -> str:
    """The six parts of an answer, numbered; `bold` titles as SKILL.md writes them."""
    mark = "**" if bold else ""
    return "\n".join(f"{n}. {mark}{title}{mark} — {what}." for n, (title, what) in enumerate(REPORT_SHAPE, 1))


def _given(*pairs: tuple[str, str]) -> str:
    stated = [f"{label}: {value}" for label, value in pairs if value]
    return "   ".join(stated) if stated else "No cluster or region given yet."


def diagnose_prompt(cluster: str = "", region: str = "", error: str = "") -> str:
    if cluster and region:
        live = f"For the live cluster, call run_diagnostic with cluster {cluster} and region {region}"
    elif cluster:
        live = f"For the live cluster, ask which AWS region {cluster} is in, then call run_diagnostic"
    else:
        live = "For a live cluster, ask for its name (or ARN) and region, then call run_diagnostic"
    error_line = f"Error reported by the user: {error}" if error else "Ask for the exact error string."
    return f"""\
Diagnose an NCCL / distributed-training failure, read-only.

{_given(("Cluster", cluster), ("Region", region))}
{error_line}

1. Logs first: if the job's logs (every rank, every node) are on this machine, call triage_logs on
   the folder now. It needs nothing else: do not ask for a cluster or region to read logs.
2. {live} (namespace and job narrow it on EKS; a saved bundle needs only `bundle`). The focused
   reads (describe_cluster, list_cluster_nodes, list_kube_contexts then list_pods / get_pod_logs
   with a `context`, scan_cloudwatch, probe_nodes, slurm_status) answer narrower questions.
3. Check the report describes the user's job: its job summary (job id, nodes, world size, dates)
   against what the user said. When they differ, say so before anything else.
4. For every FAIL and WARN, call read_reference with the file and section from its `reference`
   and read it before saying anything about a fix.
5. Answer in this shape:
{_indented(report_shape())}
   Never run them: the user does. Destructive order: investigate → reboot → replace;
   replacing a node destroys its volumes. Never discard training state on speculation.
6. {_indented(_RERUN).strip()}
"""


def triage_prompt(log_dir: str = "", storage_log_dir: str = "", error: str = "") -> str:
    where = f"Logs: {log_dir}" if log_dir else "Ask the user for the folder that holds every rank's logs."
    storage = f"   Storage daemon logs: {storage_log_dir}" if storage_log_dir else ""
    error_line = (
        f"Error reported by the user: {error}" if error else "Ask for the exact error string, if any."
    )
    return f"""\
Triage the training logs of a failed or hung distributed job, read-only.

{where}{storage}
{error_line}

No cluster name or region is needed to read logs: do not ask for them.

1. Make sure the folder holds every rank's logs (all nodes, all ranks), not one file: the rank
   that caused a hang is usually the one that printed nothing special. Node kernel logs (dmesg,
   kern.log) in the same folder are read too. The server reads only under the folders it was
   started with; if the folder is refused, ask the user to copy the logs there (the refusal
   names them) or to restart the server with --allow-dir.
2. Call triage_logs on the folder (and the storage logs, if any). The result is the report.
3. Check the report describes the user's job: its job summary (job id, nodes, world size, dates)
   against what the user said. When they differ, say so before anything else.
4. Read the root cause first: category, culprit ranks and nodes, the chain from the first
   trigger to the final crash. Watchdog timeouts on every rank are the symptom, not the cause.
5. For every FAIL and WARN, call read_reference with the file and section from its `reference`.
6. Answer in this shape:
{_indented(report_shape())}
   Never run them: the user does. Never discard training state on speculation.
7. {_indented(_RERUN).strip()}
"""


def escalation_prompt(cluster: str = "", region: str = "", report: str = "") -> str:
    report_line = (
        f"Report: {report}" if report else "Report: the latest one, a --json file or the last tool result."
    )
    return f"""\
Prepare an AWS Support escalation, read-only.

{_given(("Cluster", cluster), ("Region", region))}
{report_line}

1. Check the criteria. Escalate when the network checks pass (security groups, EFA on-node)
   but NCCL still times out; hardware checks pass on every node but the collective still
   hangs; the diagnostic finds no issue but training still fails; GPU Xid errors persist after
   a node replacement; or rendezvous on a large cluster still hangs after the collective
   timeout was raised and the memlock workaround applied. Otherwise, keep diagnosing.
2. Make sure the latest diagnostic ran on the failing job (run_diagnostic with more sampled
   nodes for an escalation, or triage_logs on every rank's logs).
3. Call create_escalation_bundle with a new file name for output_path (it is written in the
   server's output folder), the report (a file path or the report object), the saved snapshot
   folder if there is one, the log folder, and the cluster, region, namespace and job you know;
   ask the user for those you do not. It writes one new local .tar.gz, redacted, never replaces
   a file, and changes nothing on the cluster.
4. Tell the user where the bundle is, which case items it still lacks (`missing`), and ask
   them to fill those in CASE.md.
5. Give the upload as "Suggested command (run this yourself)": the `upload.command` from the
   result with their bucket filled in. Never upload it yourself. The S3 URI goes in the case.
"""


def _indented(text: str, by: int = 3) -> str:
    return "\n".join(" " * by + line if line else line for line in text.splitlines())

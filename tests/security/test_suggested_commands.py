"""Suggested commands are built from argv lists with shell quoting: hostile ids from a bundle, a
probe or a pod spec are either left out (with the reason) or passed as one quoted word, never
interpreted. Every printed line is checked with `sh -n`, with shlex, and by running it with
every program stubbed, so the shell's own argv is compared with what the builder meant."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hyperpod_nccl.analyze.k8s_common import delete_pod, describe_node, describe_pod, pod_events, pod_logs
from hyperpod_nccl.bundle.case import upload_suggestion
from hyperpod_nccl.guard.commands import hyperpod_flags, joined, placeholder, suggest, suggest_chain, value
from hyperpod_nccl.guard.validate import HostPath, InstanceId, Region, SlurmJobId, SlurmNodeName
from hyperpod_nccl.models import SuggestedCommand
from hyperpod_nccl.slurm import remediation
from tests.probes.plant import healthy, node, recorded, report, with_section
from tests.security.shell import HOSTILE, MARKER, PROGRAMS, Sandbox, make_sandbox, stages

EXAMPLE_BUNDLE = Path(__file__).parents[2] / "examples" / "eks-cluster-bundle"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    return make_sandbox(tmp_path_factory.mktemp("shell"))


def assert_safe(command: SuggestedCommand, sandbox: Sandbox, hostile: str) -> None:
    line = command.command
    assert "\n" not in line and sandbox.syntax_ok(line), line
    expected = [argv for argv in stages(line) if argv and argv[0] in PROGRAMS]
    ran = sandbox.run(line)
    assert [argv[0] for argv in ran].count(MARKER) == 0, f"the shell ran a hostile value: {line}"
    # The shell's argv is the argv shlex reads (pipeline stages start in any order): nothing split or joined.
    assert sorted(ran) == sorted(expected), line
    for argv in ran:
        for word in argv:
            # a hostile value is one whole word (a path, quoted) or absent, never part of a word
            assert hostile not in word or word == hostile or word.endswith(hostile), (word, line)


def _pod(name: str, namespace: str) -> dict:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"nodeName": name}}


BUILDERS: dict[str, Callable[[str], list[SuggestedCommand]]] = {
    "scontrol show node": lambda v: [remediation.show_node(v)],
    "squeue -w": lambda v: [remediation.show_jobs_on(v)],
    "scontrol resume": lambda v: [remediation.resume(["ip-10-1-0-1", v])],
    "scontrol replace": lambda v: [remediation.replace(v), remediation.force_down(v)],
    "scontrol job": lambda v: [
        remediation.release(v),
        remediation.show_job(v),
        remediation.read_batch_script(v),
    ],
    "kubectl pod": lambda v: [
        describe_pod(_pod(v, v)),
        pod_logs(_pod(v, "ns"), v, previous=True, why="w"),
        delete_pod(_pod("p", v), "w"),
        pod_events(v, v),
        describe_node(v),
    ],
    "aws s3 cp": lambda v: [upload_suggestion(v)],
    "hyperpod flags": lambda v: [suggest("aws sagemaker describe-cluster", *hyperpod_flags(v, v), why="w")],
    "joined": lambda v: [
        suggest("scontrol update", joined("node=", value(SlurmNodeName, v)), why="w"),
        suggest_chain(["grep -n .", value(HostPath, v)], "|", ["xargs echo", value(Region, v)], why="w"),
    ],
}


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda v: repr(v[:24]))
@pytest.mark.parametrize("builder", BUILDERS, ids=str)
def test_every_builder_leaves_out_or_quotes_a_hostile_value(
    sandbox: Sandbox, builder: str, hostile: str
) -> None:
    for command in BUILDERS[builder](hostile):
        assert_safe(command, sandbox, hostile)


def test_a_value_that_fails_its_check_is_left_out_and_the_why_says_so() -> None:
    command = suggest(
        "aws sagemaker describe-cluster-node",
        *hyperpod_flags("c1", "us-west-2; rm -rf /"),
        "--node-id",
        value(InstanceId, "i-0abc123def4567890"),
        why="Shows the node.",
    )
    assert command.command == (
        "aws sagemaker describe-cluster-node --cluster-name c1 --region '<region>' "
        "--node-id i-0abc123def4567890"
    )
    assert command.why.startswith("Shows the node. (<region> left out: 'us-west-2; rm -rf /' is not a valid")
    long = value(Region, "x" * 200_000)
    assert long.problem is not None and len(long.problem) < 200


def test_a_value_nobody_gave_stays_a_quoted_placeholder_and_the_why_says_to_replace_it() -> None:
    command = suggest(
        "sbatch", joined("--mem=", placeholder("memory")), placeholder("job-script"), why="More memory."
    )
    assert (
        command.command == "sbatch '--mem=<memory>' '<job-script>'"
    )  # quoted: pasted as is, it redirects nothing
    assert command.why == "More memory. (replace <memory>, <job-script> with your own values)"
    known = suggest("sacct -j", value(SlurmJobId, "4242"), why="The job's steps.")
    assert known.why == "The job's steps."


def _hostile_probe_outputs(hostile: str) -> Iterator[str]:
    yield with_section(healthy(), "limits", recorded("limits-memlock-64k.txt").replace("containerd", hostile))
    yield with_section(healthy(), "mtu", recorded("mtu-1500.txt").replace("ens32", hostile))


# A probe's fields are single words: hostile words without blanks.
@pytest.mark.parametrize(
    "hostile", ["$(hostile-marker)", "`hostile-marker`", "a|hostile-marker", ";hostile-marker;"]
)
def test_names_read_from_a_probe_never_reach_a_shell_unquoted(sandbox: Sandbox, hostile: str) -> None:
    for output in _hostile_probe_outputs(hostile):
        jumbo = [node(healthy(), f"i-0{n}1111111111111{n}") for n in range(3)]
        for orchestrator in ("eks", "slurm"):
            result = report(node(output, "i-0fa17ed0000000001"), *jumbo, orchestrator=orchestrator)
            for finding in result.findings:
                for command in finding.suggested_commands:
                    assert_safe(command, sandbox, hostile)


def _replaced(data: object, replacements: dict[str, str]) -> object:
    if isinstance(data, str):
        if data == "us-west-2":  # a region is a whole value; elsewhere it is part of ARNs and URLs
            return replacements["us-west-2"]
        for old, new in replacements.items():
            data = data.replace(old, new) if old != "us-west-2" else data
        return data
    if isinstance(data, dict):
        return {key: _replaced(item, replacements) for key, item in data.items()}
    if isinstance(data, list):
        return [_replaced(item, replacements) for item in data]
    return data


def _bundle_with(directory: Path, replacements: dict[str, str]) -> Path:
    snapshot = json.loads((EXAMPLE_BUNDLE / "snapshot.json").read_text())
    directory.mkdir()
    (directory / "snapshot.json").write_text(json.dumps(_replaced(snapshot, replacements)))
    return directory


@pytest.mark.parametrize("hostile", [HOSTILE[0], HOSTILE[1], HOSTILE[3]], ids=repr)
def test_a_bundle_with_hostile_ids_prints_only_safe_commands(
    sandbox: Sandbox, tmp_path: Path, hostile: str
) -> None:
    """The case from the issue: region = "us-west-2; rm -rf /" in a bundle's snapshot."""
    bundle = _bundle_with(
        tmp_path / "bundle",
        {
            "us-west-2": hostile,
            "llm-train-prod": hostile,
            "i-0c8f1d2e3a4b5c608": hostile,
            "hyperpod-i-0c8f1d2e3a4b5c607": hostile,
            "qwen-master-0": hostile,
            "sg-17e864bd94fccfe92": hostile,
        },
    )
    done = subprocess.run(
        [sys.executable, "-m", "hyperpod_nccl", "diagnose", "--bundle", str(bundle)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    printed = [line.strip()[2:] for line in done.stdout.splitlines() if line.strip().startswith("$ ")]
    assert len(printed) >= 8
    for line in printed:
        assert_safe(SuggestedCommand(command=line, why="", blast_radius="read-only check"), sandbox, hostile)
    assert any("left out" in line for line in done.stdout.splitlines())


def test_literal_words_are_split_as_shell_text_and_values_are_one_word() -> None:
    command = suggest("kubectl get pods -n", value(Region, "us-west-2"), "-o 'a b'", why="w")
    assert shlex.split(command.command) == ["kubectl", "get", "pods", "-n", "us-west-2", "-o", "a b"]

"""Families from held-out set 20 (containers, data pipelines, elastic launchers, SageMaker), each
tested in wordings other than the pasted case's: more processes than GPUs in a launcher's own words, a
math library that cannot open its kernel files, an extension built for another torch, and the NVIDIA
container toolkit refusing a container.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.triage.test_families import commands_of, describe, root_finding, triage


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        (
            "rank3.log",
            "[1,3]<stderr>:RuntimeError: The number of node-local MPI processes 16cannot be larger than the "
            "device count 8\n",
            ("config", "triage.config.invalid_device"),
        ),
        (
            "server.log",
            "hipblaslt error: Could not load /opt/rocm/lib/hipblaslt/TensileLibrary_lazy_gfx90a.dat\n",
            ("config", "triage.config.library_files"),
        ),
        (
            "train.log",
            "TypeError: __init__(): incompatible constructor arguments. The following argument types are "
            "supported:\n",
            ("software", "triage.software.binding_mismatch"),
        ),
        (
            "agent.log",
            "Error: Rank 2 received an Exception. Detailed message: TCPStore: No constructor defined!\n",
            ("software", "triage.software.binding_mismatch"),
        ),
        (
            "slurm-77.out",
            "pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.05-py3\n"
            "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your "
            "driver to a newer version, or use an earlier cuda container\n",
            ("software", "triage.software.image_needs_newer_driver"),
        ),
        (
            "slurm-78.out",
            "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open "
            "shared object file: no such file or directory\n",
            ("software", "triage.software.container_toolkit"),
        ),
    ],
)
def test_setups_that_fail_before_training(
    tmp_path: Path, name: str, text: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {name: text})
    assert root_finding(report) == expected, describe(report)
    assert report.blocking


def test_a_math_librarys_missing_files_ask_for_the_open_files_limit(tmp_path: Path) -> None:
    text = "rocblaslt error: Could not load /opt/conda/lib/hipblaslt/library/TensileLibrary_lazy_gfx942.dat\n"
    report = triage(tmp_path, {"worker.log": text})
    assert "ulimit -n" in commands_of(report, "triage.config.library_files")


def test_a_tensile_line_that_is_no_failure_stays_clean(tmp_path: Path) -> None:
    text = "rocBLAS info: Tensile library loaded from /opt/rocm/lib/rocblas/library (lazy loading on)\n"
    report = triage(tmp_path, {"worker.log": text})
    assert report.root_cause is None and not report.blocking, describe(report)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[rank3]: RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:\n"
            "[rank3]: \tsize mismatch for lm_head.weight: copying a param with shape "
            "torch.Size([32000, 4096]) from checkpoint, the shape in current model is torch.Size([0]).\n",
            ("software", "triage.software.sharded_load"),
        ),
        (
            "RuntimeError: Error(s) in loading state_dict for GPT:\n"
            "\tsize mismatch for wte.weight: copying a param with shape torch.Size([50304, 768]) from "
            "checkpoint, the shape in current model is torch.Size([50257, 768]).\n",
            ("config", "triage.config.checkpoint_shape"),
        ),
    ],
)
def test_a_checkpoint_that_does_not_fit_its_model(
    tmp_path: Path, text: str, expected: tuple[str, str]
) -> None:
    report = triage(tmp_path, {"train.log": text})
    assert root_finding(report) == expected, describe(report)


@pytest.mark.parametrize(
    "line",
    [
        "step 1200 | lr 3.0e-04 | loss: nan | grad_norm: inf",
        "{'loss': nan, 'learning_rate': 1.9e-05, 'epoch': 0.42}",
        "RuntimeError: Loss is NaN at iteration 5400",
    ],
)
def test_a_loss_that_turned_nan_is_a_visible_failure(tmp_path: Path, line: str) -> None:
    report = triage(tmp_path, {"train.log": f"step 1199 | lr 3.0e-04 | loss: 2.31\n{line}\n"})
    assert root_finding(report) == ("unknown", "triage.unknown.nan_loss"), describe(report)
    assert report.blocking


def test_a_finite_loss_or_a_nan_elsewhere_is_no_failure(tmp_path: Path) -> None:
    text = "step 5 | loss: 2.31 | nan_count: 0\nskip_nan_inf_check=False, loss_scale: 65536\n"
    report = triage(tmp_path, {"train.log": text})
    assert report.root_cause is None and not report.blocking, describe(report)

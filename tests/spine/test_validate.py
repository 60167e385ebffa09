from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from hyperpod_nccl.guard.validate import ClusterName, ExistingPath, InstanceId, JobName, Namespace, Region


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        (ClusterName, "ml-cluster-1", "ml cluster; rm -rf /"),
        (ClusterName, "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcd1234", "arn:aws:s3:::bucket"),
        (Region, "us-west-2", "us-west-2; curl"),
        (Namespace, "training", "Training_NS"),
        (JobName, "llama-pretrain", "$(reboot)"),
        (JobName, "45791123", "4579 1123"),
        (InstanceId, "i-0abc123def4567890", "i-XYZ"),
    ],
)
def test_identifiers_accept_real_values_and_refuse_anything_else(kind, good: str, bad: str) -> None:
    adapter = TypeAdapter(kind)
    assert adapter.validate_python(good) == good
    with pytest.raises(ValidationError, match="is not a valid"):
        adapter.validate_python(bad)


def test_missing_path_is_refused_with_a_clear_message(tmp_path) -> None:
    adapter = TypeAdapter(ExistingPath)
    assert adapter.validate_python(str(tmp_path)) == str(tmp_path)
    with pytest.raises(ValidationError, match="does not exist"):
        adapter.validate_python(str(tmp_path / "nope"))


def test_validated_gives_the_one_line_reason_without_pydantic_framing() -> None:
    from hyperpod_nccl.guard.validate import validated

    assert validated(Region, "us-west-2") == "us-west-2"
    with pytest.raises(ValueError, match=r"^'us west' is not a valid AWS region \(example: us-west-2\)$"):
        validated(Region, "us west")

"""What the AWS collectors saw: caller identity, the HyperPod cluster, its nodes and events,
security groups and CloudWatch. Field names follow the AWS API responses they come from."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class AwsSnapshot(BaseModel):
    account: str | None = None
    caller_arn: str | None = None
    cluster: dict[str, Any] | None = Field(default=None, description="sagemaker:DescribeCluster response.")

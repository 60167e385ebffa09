"""The IAM policy a user copies from operations.md § 2 grants exactly what the guard lets the
product call: derived from `iam_actions()`, never copied by hand."""

from __future__ import annotations

import json
import re

from hyperpod_nccl.guard.aws import iam_actions
from hyperpod_nccl.references import default_index


def policy_in_section() -> dict:
    index = default_index()
    text = index.text(index.section("operations.md", "2"))
    blocks = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", text, re.DOTALL)]
    policies = [block for block in blocks if "Statement" in block]
    assert len(policies) == 1, "operations.md § 2 should hold one JSON IAM policy"
    return policies[0]


def test_the_policy_allows_exactly_the_actions_the_guard_allows() -> None:
    policy = policy_in_section()
    actions = [action for statement in policy["Statement"] for action in statement["Action"]]
    assert sorted(actions) == iam_actions()
    assert len(actions) == len(set(actions)), "an action is listed twice"


def test_the_policy_only_allows_and_names_no_wildcard_action() -> None:
    for statement in policy_in_section()["Statement"]:
        assert statement["Effect"] == "Allow"
        assert all("*" not in action for action in statement["Action"]), statement["Action"]

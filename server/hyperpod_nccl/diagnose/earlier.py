"""Findings about trouble that came and went before the failure.

CloudWatch and the Kubernetes events keep hours of history: a transport error and a node flap two
hours before the job stuck are real, but they are not this failure. A blocking finding whose every
dated event lies before the failure, outside the window that would tie it to it, is set aside as
WARN (P2 when the node is healthy again, P1 when it is not), saying when it happened. Findings
with no dated event stay as they are: nothing says they are old.
"""

from __future__ import annotations

from hyperpod_nccl.diagnose.cause import is_cause_finding
from hyperpod_nccl.diagnose.timeline.model import TimedEvent
from hyperpod_nccl.diagnose.trigger import LINES_UP, Choice, why_not
from hyperpod_nccl.models import Evidence, Finding, Priority, Status


def _events_of(finding: Finding, choice: Choice) -> list[TimedEvent]:
    places = set(finding.nodes) | set(finding.instance_ids)
    return [e for e in choice.candidates if (e.node in places or e.instance_id in places)]


def _healthy_again(events: list[TimedEvent], timeline: list[TimedEvent]) -> bool:
    last = max(e.time for e in events if e.time)
    nodes = {e.node for e in events if e.node}
    return bool(nodes) and all(
        any(e.kind == "node.ready" and e.node == node and e.time and e.time >= last for e in timeline)
        for node in nodes
    )


def _blocking(finding: Finding) -> bool:
    return finding.is_issue and finding.priority in (Priority.P0, Priority.P1) and is_cause_finding(finding)


def set_aside_earlier(findings: list[Finding], choice: Choice, timeline: list[TimedEvent]) -> list[Finding]:
    anchor = choice.anchor
    if anchor is None or anchor.time is None:
        return findings
    cutoff = anchor.time - LINES_UP
    result = []
    for finding in findings:
        events = _events_of(finding, choice) if _blocking(finding) else []
        if not events or any(e.time is None or e.time >= cutoff for e in events):
            result.append(finding)
            continue
        first = min(events, key=lambda e: e.time)  # type: ignore[arg-type, return-value]
        reason = why_not(first, choice, timeline)
        result.append(
            finding.model_copy(
                update={
                    "status": Status.WARN,
                    "priority": Priority.P2 if _healthy_again(events, timeline) else Priority.P1,
                    "title": f"Earlier, not this failure: {finding.title}",
                    "detail": f"On the timeline: {reason}. {finding.detail}".strip(),
                    "evidence": [Evidence(source="cluster timeline", text=reason), *finding.evidence],
                }
            )
        )
    return result

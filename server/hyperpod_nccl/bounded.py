"""Text fields with a hard size limit, so no input can make an output unbounded.

A 50 MB node status message once became a 50 MB report. Every evidence, message and title field
of the report and snapshot models is one of these types: longer text is cut, saying how much
was cut, to exactly the limit, so cutting again (models are re-validated on every redaction)
changes nothing. Log text keeps its end, where a failure is; everything else keeps its start.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator


def _cutter(limit: int, keep: Literal["head", "tail"]):
    def cut(value: str) -> str:
        if len(value) <= limit:
            return value
        marker = f" … [{len(value) - limit} characters cut]"
        # Cut a few more so the result is exactly `limit` long, marker included.
        while True:
            room = limit - len(marker)
            dropped = len(value) - room
            candidate = f" … [{dropped} characters cut]"
            if candidate == marker:
                break
            marker = candidate
        return value[:room] + marker if keep == "head" else marker.strip() + " " + value[-room:]

    return cut


def bounded(limit: int, keep: Literal["head", "tail"] = "head") -> AfterValidator:
    return AfterValidator(_cutter(limit, keep))


ShortText = Annotated[str, bounded(1_000)]  # names, sources, titles
Text = Annotated[str, bounded(4_000)]  # evidence lines, messages, details
LogText = Annotated[str, bounded(1_000_000, keep="tail")]  # a log tail: the end is what matters

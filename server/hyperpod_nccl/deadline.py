"""A deadline for every MCP tool call, with progress while the client waits.

Every AWS and Kubernetes request has its own connect/read timeouts, but a tool makes many; a
silent endpoint must not hold a call for minutes with nothing to show. So each tool runs under
the server's deadline (`serve --tool-deadline`), and while it runs the client gets a progress
notification every few seconds. A call past its deadline ends with a one-line error.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

from hyperpod_nccl.server_settings import current

PROGRESS_EVERY_S = 5.0
_CONTEXT_PARAMETER = "deadline_ctx"


class ToolDeadlineExceeded(ToolError):
    """The tool did not finish within the server's deadline."""


def _context_of(tool: Callable[..., Any]) -> str | None:
    for name, parameter in inspect.signature(tool).parameters.items():
        if parameter.annotation in (Context, "Context"):
            return name
    return None


async def _report_while_waiting(ctx: Context | None, name: str, started: float, deadline: float) -> None:
    if ctx is None:
        return
    # A short deadline still shows progress before it: at least twice on the way.
    every = min(PROGRESS_EVERY_S, deadline / 3)
    while True:
        await anyio.sleep(every)
        waited = time.monotonic() - started
        try:
            await ctx.report_progress(waited, None, f"{name}: still waiting after {waited:.0f} s")
        except Exception:  # a client that cannot take progress must not fail the tool
            return


def _discard(task: asyncio.Future[Any]) -> None:
    """The outcome of a call already answered with a timeout: nobody is waiting for it."""
    if not task.cancelled():
        task.exception()


def with_deadline(tool: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    """`tool` as an async tool that gives up after the server's deadline, reporting progress.

    Sync tools run in a worker thread. The wrapper takes the MCP Context itself (for progress),
    and passes it on when the tool has a Context parameter of its own."""
    own_context = _context_of(tool)
    is_async = inspect.iscoroutinefunction(tool)

    @functools.wraps(tool)
    async def run(*args: Any, **kwargs: Any) -> Any:
        ctx = kwargs.pop(_CONTEXT_PARAMETER, None)
        deadline = current().tool_deadline_s
        started = time.monotonic()
        call = (
            (lambda: tool(*args, **kwargs))
            if is_async
            else (
                lambda: anyio.to_thread.run_sync(
                    functools.partial(tool, *args, **kwargs), abandon_on_cancel=True
                )
            )
        )
        # The tool runs as its own task: a worker thread blocked on a socket cannot be cancelled, so
        # at the deadline the call is answered and the task is left to finish on its own.
        task = asyncio.ensure_future(call())
        with anyio.move_on_after(deadline):
            async with anyio.create_task_group() as group:
                if not own_context:  # a tool with its own Context reports its own progress
                    group.start_soon(_report_while_waiting, ctx, tool.__name__, started, deadline)
                await asyncio.wait({task})
                group.cancel_scope.cancel()
        if not task.done():
            task.add_done_callback(_discard)
            raise ToolDeadlineExceeded(
                f"{tool.__name__} did not finish within {deadline:.0f} s (the server's --tool-deadline): "
                "an AWS or Kubernetes endpoint is slow or not answering; check access and retry"
            )
        return task.result()  # the tool's own exception, as itself

    signature = inspect.signature(tool, eval_str=True)
    if not own_context:
        extra = inspect.Parameter(
            _CONTEXT_PARAMETER, inspect.Parameter.KEYWORD_ONLY, annotation=Context, default=None
        )
        run.__signature__ = signature.replace(parameters=[*signature.parameters.values(), extra])  # type: ignore[attr-defined]
        run.__annotations__ = {**getattr(tool, "__annotations__", {}), _CONTEXT_PARAMETER: Context}
    return run

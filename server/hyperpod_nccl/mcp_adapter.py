"""The MCP server class hyperpod-nccl runs: the SDK's MCPServer with three house rules.

- A tool's result is redacted and its text is the JSON the CLI prints (`render.json_text`), so
  the size budget measured on one holds for the other.
- A failure reaches the client as one short line it can act on (`tool_errors`), never an
  exception group or a bare "Error executing tool".
- `tools/list` carries each output schema as an outline (top-level fields, their types and
  descriptions) instead of the full report schema repeated per tool; the full schemas are one
  resource each (`hyperpod-nccl://schema/<Model>`). Every result still validates against its
  outline, and the server still validates every result against the full model.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import Callable
from typing import Any, get_type_hints

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources.types import FunctionResource
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, Tool, ToolAnnotations
from pydantic import BaseModel

from hyperpod_nccl.guard.redact import redact_model
from hyperpod_nccl.render import json_text
from hyperpod_nccl.tool_errors import tool_failure

logger = logging.getLogger(__name__)
SCHEMA_URI = "hyperpod-nccl://schema/{name}"


def _presented(result: Any) -> Any:
    if not isinstance(result, BaseModel):
        return result
    data = redact_model(result).model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=json_text(data))], structured_content=data)


def presented(tool: Callable[..., Any]) -> Callable[..., Any]:
    """`tool` with its result redacted and printed as the CLI prints it."""
    if inspect.iscoroutinefunction(tool):

        @functools.wraps(tool)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            return _presented(await tool(*args, **kwargs))

        return run_async

    @functools.wraps(tool)
    def run(*args: Any, **kwargs: Any) -> Any:
        return _presented(tool(*args, **kwargs))

    return run


def _resolve(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    reference = schema.get("$ref", "")
    return definitions.get(reference.rsplit("/", 1)[-1], {}) if reference else schema


def _shape(schema: dict[str, Any], definitions: dict[str, Any], top: bool) -> dict[str, Any]:
    """Type (and enum, for a top-level field) of one schema node, without what lies below it."""
    schema = _resolve(schema, definitions)
    if "anyOf" in schema:
        types: list[str] = []
        for option in schema["anyOf"]:
            kind = _shape(option, definitions, top=False).get("type", [])
            types += [t for t in ([kind] if isinstance(kind, str) else kind) if t not in types]
        return {"type": types[0] if len(types) == 1 else types} if types else {}
    kind = schema.get("type", "object" if "properties" in schema else None)
    if kind == "array":
        return {"type": "array", "items": _shape(schema.get("items", {}), definitions, top=False)}
    shape: dict[str, Any] = {"type": kind} if kind else {}
    if top and "enum" in schema:
        shape["enum"] = schema["enum"]
    return shape


def outline(schema: dict[str, Any] | None, full: str | None = None) -> dict[str, Any] | None:
    """An output schema cut to its top-level fields: each one's type and description; `full` is
    where the whole schema is."""
    if not schema or "properties" not in schema:
        return schema
    definitions = schema.get("$defs", {})
    properties = {}
    for name, field in schema["properties"].items():
        shape = _shape(field, definitions, top=True)
        description = field.get("description") or _resolve(field, definitions).get("description")
        properties[name] = {**shape, "description": " ".join(description.split())} if description else shape
    compact: dict[str, Any] = {"type": "object", "properties": properties}
    if full:
        compact["description"] = f"Full schema: resource {full}"
    if schema.get("required"):
        compact["required"] = schema["required"]
    return compact


def _argument(schema: dict[str, Any]) -> dict[str, Any]:
    """One argument's schema without its title, an optional one as its type (null is implied by
    leaving it out)."""
    schema = {key: value for key, value in schema.items() if key != "title"}
    options = schema.get("anyOf", [])
    given = [option for option in options if option != {"type": "null"}]
    if len(given) == 1 and len(options) == 2 and schema.get("default", ...) is None:
        rest = {key: value for key, value in schema.items() if key not in ("anyOf", "default")}
        schema = {**given[0], **rest}
    return schema


def compact_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema without per-property titles and `anyOf [T, null]` wrappers."""
    properties = {name: _argument(field) for name, field in schema.get("properties", {}).items()}
    return {
        **{key: value for key, value in schema.items() if key != "title"},
        "properties": properties,
    }


class HyperpodServer(MCPServer):
    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._arguments: dict[str, frozenset[str]] = {}
        self._schema_uris: dict[str, str] = {}  # tool → where its full output schema is

    async def run_stdio_streams(self, stdin: Any, stdout: Any) -> None:
        """`run("stdio")` over given line streams (the front door's, which own the process's wire)."""
        async with stdio_server(anyio.wrap_file(stdin), anyio.wrap_file(stdout)) as (read, write):
            await self._lowlevel_server.run(
                read, write, self._lowlevel_server.create_initialization_options()
            )

    def add_presented_tool(self, tool: Callable[..., Any], annotations: ToolAnnotations) -> None:
        self._arguments[tool.__name__] = frozenset(inspect.signature(tool).parameters)
        returned = get_type_hints(tool).get("return")
        if isinstance(returned, type) and issubclass(returned, BaseModel):
            self._schema_uris[tool.__name__] = self._schema_resource(returned)
        self.add_tool(
            presented(tool), description=inspect.getdoc(tool), annotations=annotations, structured_output=True
        )

    def _schema_resource(self, model: type[BaseModel]) -> str:
        uri = SCHEMA_URI.format(name=model.__name__)
        if uri not in self._schema_uris.values():
            # Written when read: generating every schema would cost the server's start a tenth of a second.
            self.add_resource(
                FunctionResource(
                    uri=uri,
                    name=f"{model.__name__} schema",
                    description=f"Full JSON Schema of {model.__name__}, returned by the tools that name it.",
                    mime_type="application/schema+json",
                    fn=lambda: json.dumps(model.model_json_schema()),
                )
            )
        return uri

    async def list_tools(self) -> list[Tool]:
        return [
            tool.model_copy(
                update={
                    "input_schema": compact_arguments(tool.input_schema),
                    "output_schema": outline(tool.output_schema, self._schema_uris.get(tool.name)),
                }
            )
            for tool in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except MCPError:
            raise
        except Exception as error:
            message, anticipated = tool_failure(name, error, self._arguments.get(name, ()))
            if anticipated:
                logger.info("Tool %r failed: %r", name, message)
            else:
                cause = error.__cause__ or error
                logger.error("Tool %r raised an unexpected exception", name, exc_info=cause)
            return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)

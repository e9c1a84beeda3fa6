#!/usr/bin/env python3
"""Test MCP server built on the official Python SDK (FastMCP; in mcp 2.x it is named MCPServer).

Run with the peers venv (see .ci/install-peers):

    .peers/bin/python drivers/tests/peers/fastmcp_server.py --transport stdio
    .peers/bin/python drivers/tests/peers/fastmcp_server.py --transport http [--port N] [--json-response]
                                                     [--stateless] [--resumable [--retry-ms MS]]

Transports
  stdio  JSON-RPC lines on stdin/stdout. Logs go to stderr.
  http   Streamable HTTP on http://127.0.0.1:PORT/mcp (always 127.0.0.1, never a wildcard address).
         --port 0 (the default) lets the OS pick a free port: the script binds the listening socket
         itself (no race) and hands it to uvicorn.

Readiness (http): once uvicorn accepts connections the script prints exactly one line to STDOUT and
flushes it:

    LISTENING http://127.0.0.1:PORT/mcp

Nothing else is written to stdout in http mode (logs go to stderr), so a test reads the first stdout
line. In stdio mode no such line is printed (stdout is the protocol stream).

Options
  --json-response  answer POSTed requests with one `application/json` body instead of `text/event-stream`.
  --stateless      no Mcp-Session-Id; every request is handled on its own.
  --resumable      keep SSE events in an in-memory event store: every SSE response starts with a
                   priming event (`id: ...` + empty `data:`) and events carry ids, so a client can
                   resume with GET + Last-Event-ID. Only for protocol >= 2025-11-25 (SDK rule).
  --retry-ms MS    with --resumable, add `retry: MS` to priming events.
  --trace          add the tool trace_meta() -> str: the W3C trace context keys (`traceparent`,
                   `tracestate`) of the call's own `params._meta`, as a JSON object of those present
                   (`{}` when none), so that a test sees what a server's instrumentation would
                   extract (OpenTelemetry semantic conventions for MCP, § Context propagation).
  --changes        add the resource test://counter (text: how many times `bump` ran) and the tool
                   bump() -> str, which counts one more and publishes, for `subscriptions/listen`
                   streams (2026-07-28, mcp >= 2), a resource update of test://counter and a tool
                   list change; and the tool announce() -> "announced", which says the resource
                   and prompt lists changed (through the listen at 2026-07-28, as plain
                   notifications at earlier versions).

Tools
  add(a:int, b:int) -> int       structured result {"result": a+b} plus text content
  echo(text:str) -> str
  fail(message:str)              raises; the SDK returns a CallToolResult with isError=true and the
                                 message as text content
  image()                        one image content block: a 1x1 PNG, mimeType image/png
  confirm(action:str) -> str     asks the user (elicitation/create, form mode) to confirm `action`:
                                 schema {confirmed: boolean (required), name: string (default "Ada")};
                                 answers "<name> confirmed <action>" / "<name> refused <action>", or
                                 "declined: <action>" / "cancelled: <action>". Era-adaptive (an SDK
                                 resolver, mcp >= 2): at 2026-07-28 an input_required round (the
                                 retry carries inputResponses and the sealed requestState), at
                                 <= 2025-11-25 an elicitation/create request mid-call (on the call's
                                 SSE stream over HTTP; not possible in --json-response mode).
                                 Listed for every client; needs the elicitation capability when called
                                 (else -32021 at 2026-07-28).
  count(steps:int) -> str        reports progress (ctx.report_progress: i of steps, "step i of N")
                                 after each step, then answers "counted to N". Progress goes out only
                                 when the call's _meta has a progressToken; not in --json-response mode
                                 over HTTP.

Resources
  test://greeting                text/plain "Hello from the Python SDK"
  test://pixel                   image/png blob: the 1x1 PNG
  test://users/{id}/profile      template: text "profile of user <id>" (text/plain)

Prompts
  review(code:str, language:str="python")
                                 two messages: a user text message naming the language and the
                                 code, and an assistant message with the greeting embedded as a
                                 resource
  plain()                        one user text message "plain prompt"

Completions (completion/complete)
  ref/prompt review, argument language: the languages in LANGUAGES starting with the value
  ref/resource test://users/{id}/profile, argument id: the USER_IDS starting with the value; with
                                 context argument "team" = "ops" only the ids starting with "o"
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import socket
import sys

from typing import Annotated

from pydantic import BaseModel, Field

try:  # mcp >= 2
    from mcp.server.mcpserver import (
        AcceptedElicitation,
        Context,
        DeclinedElicitation,
        Elicit,
        ElicitationResult,
        Resolve,
    )
    from mcp.server.mcpserver import MCPServer as FastMCP
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.utilities.types import Image

    HAVE_RESOLVERS = True
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]
    from mcp.server.fastmcp.utilities.types import Image  # type: ignore[no-redef]

    HAVE_RESOLVERS = False

# 1x1 opaque red PNG.
PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)

mcp = FastMCP("fastmcp-test-server", version="1.0.0")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool()
def fail(message: str) -> str:
    """Always fails with the given message (the result has isError: true)."""
    # ToolError: the SDK puts its message in the result; any other exception becomes the generic
    # text "Error executing tool fail" (and a traceback on stderr).
    raise ToolError(message)


@mcp.tool()
def image() -> Image:
    """Return a 1x1 PNG image content block."""
    return Image(data=PNG_1X1, format="png")


class Confirmation(BaseModel):
    confirmed: bool = Field(description="Go ahead?")
    name: str = Field(default="Ada", description="Who answers")


def _confirmed(action: str, data: Confirmation) -> str:
    return f"{data.name} {'confirmed' if data.confirmed else 'refused'} {action}"


if HAVE_RESOLVERS:

    def ask_confirmation(action: str) -> Elicit[Confirmation]:
        return Elicit(f"Confirm: {action}?", Confirmation)

    @mcp.tool()
    def confirm(
        action: str,
        answer: Annotated[ElicitationResult[Confirmation], Resolve(ask_confirmation)],
    ) -> str:
        """Ask the user to confirm an action, and say what they answered."""
        if isinstance(answer, AcceptedElicitation):
            return _confirmed(action, answer.data)
        if isinstance(answer, DeclinedElicitation):
            return f"declined: {action}"
        return f"cancelled: {action}"

else:  # mcp 1.x: the legacy era only

    @mcp.tool()
    async def confirm(action: str, ctx: Context) -> str:
        """Ask the user to confirm an action, and say what they answered."""
        answer = await ctx.elicit(f"Confirm: {action}?", Confirmation)
        if answer.action == "accept":
            return _confirmed(action, answer.data)
        return f"{'declined' if answer.action == 'decline' else 'cancelled'}: {action}"


@mcp.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count to `steps`, reporting progress after each step."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
        await asyncio.sleep(0.02)
    return f"counted to {steps}"


@mcp.resource("test://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed greeting."""
    return "Hello from the Python SDK"


@mcp.resource("test://pixel", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    """The 1x1 PNG, as a blob."""
    return PNG_1X1


@mcp.resource("test://users/{id}/profile", name="profile", mime_type="text/plain")
def profile(id: str) -> str:
    """A user's profile."""
    return f"profile of user {id}"


COUNTER = {"value": 0}


def add_changes() -> None:
    """With --changes: a resource that changes and the tool that changes it (see the docstring)."""

    @mcp.resource("test://counter", name="counter", mime_type="text/plain")
    def counter() -> str:
        """How many times `bump` ran."""
        return str(COUNTER["value"])

    @mcp.tool()
    async def bump(ctx: Context) -> str:
        """Count one more: test://counter is updated, and the tool list announced changed."""
        COUNTER["value"] += 1
        # mcp >= 2: events for `subscriptions/listen` streams (2026-07-28); nobody listening is
        # no error.
        await ctx.notify_resource_updated("test://counter")
        await ctx.notify_tools_changed()
        return str(COUNTER["value"])

    @mcp.tool()
    async def announce(ctx: Context) -> str:
        """Announce that the resource and prompt lists changed: to `subscriptions/listen` streams
        at 2026-07-28, as plain notifications on the session at earlier versions."""
        if ctx.protocol_version == "2026-07-28":
            await ctx.notify_resources_changed()
            await ctx.notify_prompts_changed()
        else:
            await ctx.session.send_resource_list_changed()
            await ctx.session.send_prompt_list_changed()
        return "announced"


def add_trace() -> None:
    """With --trace: the tool that shows the call's trace context (see the docstring)."""

    @mcp.tool()
    def trace_meta(ctx: Context) -> str:
        """The traceparent and tracestate of this call's _meta, as JSON."""
        meta = ctx.request_context.meta or {}
        if hasattr(meta, "model_dump"):  # mcp 1.x: a pydantic model with extra keys
            meta = meta.model_dump(by_alias=True)
        return json.dumps({k: meta[k] for k in ("traceparent", "tracestate") if k in meta})


try:  # the message types: mcp >= 2 and 1.x name them alike
    from mcp.types import (
        Completion,
        EmbeddedResource,
        PromptReference,
        ResourceTemplateReference,
        TextContent,
        TextResourceContents,
    )
    from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp.prompts.base import AssistantMessage, UserMessage  # type: ignore[no-redef]

LANGUAGES = ["python", "perl", "php", "rust", "ruby"]
USER_IDS = ["ada", "alan", "grace", "otto", "olga"]


@mcp.prompt()
def review(code: str, language: str = "python") -> list:
    """Review a piece of code."""
    return [
        UserMessage(TextContent(type="text", text=f"Review this {language} code:\n{code}")),
        AssistantMessage(
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="test://greeting", mimeType="text/plain", text="Hello from the Python SDK"
                ),
            )
        ),
    ]


@mcp.prompt()
def plain() -> str:
    """A prompt without arguments."""
    return "plain prompt"


@mcp.completion()
async def complete(ref, argument, context):
    value = argument.value or ""
    if isinstance(ref, PromptReference) and ref.name == "review" and argument.name == "language":
        found = [lang for lang in LANGUAGES if lang.startswith(value)]
        return Completion(values=found, total=len(found), has_more=False)
    if isinstance(ref, ResourceTemplateReference) and argument.name == "id":
        ids = USER_IDS
        given = (context.arguments or {}) if context else {}
        if given.get("team") == "ops":
            ids = [i for i in ids if i.startswith("o")]
        return Completion(values=[i for i in ids if i.startswith(value)])
    return None


def make_event_store():
    """A minimal in-memory EventStore (the SDK ships only the interface)."""
    from mcp.server.streamable_http import EventMessage, EventStore

    class MemoryEventStore(EventStore):
        def __init__(self) -> None:
            self._events: list[tuple[str, str, object]] = []  # (event_id, stream_id, message|None)
            self._ids = itertools.count(1)

        async def store_event(self, stream_id, message):
            event_id = str(next(self._ids))
            self._events.append((event_id, stream_id, message))
            return event_id

        async def replay_events_after(self, last_event_id, send_callback):
            idx = next((i for i, e in enumerate(self._events) if e[0] == last_event_id), None)
            if idx is None:
                return None
            stream_id = self._events[idx][1]
            for event_id, sid, message in self._events[idx + 1 :]:
                if sid == stream_id and message is not None:
                    await send_callback(EventMessage(message, event_id))
            return stream_id

    return MemoryEventStore()


async def serve_http(args: argparse.Namespace) -> None:
    import uvicorn

    kwargs = dict(json_response=args.json_response, stateless_http=args.stateless)
    if args.resumable:
        kwargs["event_store"] = make_event_store()
        if args.retry_ms is not None:
            kwargs["retry_interval"] = args.retry_ms
    app = mcp.streamable_http_app(**kwargs)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    sock.setblocking(False)
    port = sock.getsockname()[1]

    config = uvicorn.Config(app, log_level=args.log_level.lower(), lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task  # re-raise the startup failure
            sys.exit(1)
        await asyncio.sleep(0.01)
    print(f"LISTENING http://127.0.0.1:{port}/mcp", flush=True)
    await task


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--port", type=int, default=0, help="http: port on 127.0.0.1 (0 = pick a free one)")
    p.add_argument("--json-response", action="store_true")
    p.add_argument("--stateless", action="store_true")
    p.add_argument("--resumable", action="store_true")
    p.add_argument("--retry-ms", type=int, default=None)
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--changes", action="store_true", help="add the counter resource and bump tool")
    p.add_argument("--trace", action="store_true", help="add the trace_meta tool")
    args = p.parse_args()
    if args.trace:
        add_trace()
    if args.changes:
        add_changes()
    mcp.settings.log_level = args.log_level.upper()
    if args.transport == "stdio":
        mcp.run("stdio")
    else:
        try:
            asyncio.run(serve_http(args))
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()

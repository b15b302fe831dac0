"""What the endpoint saves per tools/call keeps every answer and every error the same
(issue 19 part C): answers encoded once unless they hold a null field, arguments
validated once, the access rules remembered per Host and client address.

Driven in-process through `McpEndpoint`, with a tool set of this module's own (registered
through TOOLSET_MODULES, as tests/mcp/extra_toolset.py is) whose answers hold what the
shortcuts must not get wrong.
"""

from __future__ import annotations

import datetime
import json
from typing import Annotated, Any

import pytest
from django.test import override_settings
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import TextContent
from pydantic import BaseModel, ConfigDict, Field

from mcp_endpoint import http
from mcp_endpoint import registry as registry_module
from mcp_endpoint.registry import READ_ONLY, Registry, build_server, tool_result

pytestmark = pytest.mark.anyio


class Shelf(BaseModel):
    """An answer with nulls where model dumps leave them (fields, extras) and where they
    do not (inside plain dicts)."""

    model_config = ConfigDict(extra="allow")

    name: str
    note: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    items: list[Any] = Field(default_factory=list)


def register(registry: Registry) -> None:
    @registry.tool(name="shelf", title="Shelf", description="Echo.", annotations=READ_ONLY)
    def shelf(
        tags: Annotated[list[Annotated[str, Field(max_length=5)]], Field(max_length=3)],
        limit: int = 3,
    ) -> Shelf:
        return Shelf(name=",".join(tags), details={"limit": limit, "gone": None})


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> http.McpEndpoint:
    monkeypatch.setitem(registry_module.TOOLSET_MODULES, "cost", __name__)
    return http.McpEndpoint(build_server(toolsets=["cost"]))


def post(body: Any, *, host: str = "127.0.0.1:8000", client: str = "127.0.0.1") -> http.HttpRequest:
    return http.HttpRequest(
        method="POST",
        headers=[("host", host), ("content-type", "application/json")],
        body=json.dumps(body).encode(),
        client_host=client,
    )


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def answer_text(value: Any) -> str:
    block = tool_result(value).content[0]
    assert isinstance(block, TextContent)
    return block.text


def old_lean(value: Any) -> Any:
    """The walk every answer went through before (mcp_endpoint/registry.py `_lean`)."""
    if isinstance(value, dict):
        return {key: old_lean(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [old_lean(item) for item in value]
    return value


def old_text(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(
        old_lean(value),
        ensure_ascii=False,
        separators=(",", ":"),
        default=registry_module._json_value,
    )


@pytest.mark.parametrize(
    "value",
    [
        Shelf.model_validate(
            {
                "name": "a",
                "note": None,
                "extra": None,
                "other": {"x": None, "y": [None, {"z": None}]},
            }
        ),
        Shelf(name="no nulls", details={"k": 1}, items=[1, "two", [3]]),
        Shelf(name='text that says ":null" and "x":null', items=[":null", None]),
        {"title": "a:null", "nested": {"deep": {"deeper": None, "kept": 0}}, "list": [None]},
        {"title": "é — ü \u2028", "when": datetime.date(2024, 2, 29), "nothing": None},
        [None, {"a": None}],
        None,
        "plain text",
    ],
)
def test_answers_are_the_bytes_the_full_walk_gave(value: Any) -> None:
    text = answer_text(value)
    assert text == old_text(value)
    assert '"gone"' not in text and "deeper" not in text


def test_a_string_holding_null_is_kept_as_it_is() -> None:
    text = answer_text({"title": 'x":null,"y', "gone": None})
    assert json.loads(text) == {"title": 'x":null,"y'}


async def test_a_tool_calls_arguments_are_validated_once(
    endpoint: http.McpEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    validated: list[dict[str, Any]] = []
    original = FuncMetadata.validate_arguments

    def counting(self: FuncMetadata, arguments: dict[str, Any]) -> dict[str, Any]:
        validated.append(arguments)
        return original(self, arguments)

    monkeypatch.setattr(FuncMetadata, "validate_arguments", counting)
    answer = await endpoint.handle(post(call("shelf", {"tags": ["a", "b"], "limit": "4"})))
    assert answer.status == 200
    assert json.loads(answer.json()["result"]["content"][0]["text"]) == {
        "name": "a,b",
        "details": {"limit": 4},
        "items": [],
    }
    assert len(validated) == 1

    # The next call validates its own arguments, not the previous call's.
    validated.clear()
    answer = await endpoint.handle(post(call("shelf", {"tags": ["c"]})))
    assert json.loads(answer.json()["result"]["content"][0]["text"])["name"] == "c"
    assert len(validated) == 1


async def test_arguments_that_fail_validation_are_still_32602_naming_the_field(
    endpoint: http.McpEndpoint,
) -> None:
    error = (await endpoint.handle(post(call("shelf", {"tags": ["far too long"]})))).json()["error"]
    assert error["code"] == -32602
    assert error["data"]["errors"][0]["field"] == "tags.0"
    assert "far too long" not in json.dumps(error)  # the caller's value is not echoed


async def test_the_access_rules_follow_the_settings_of_each_request(
    endpoint: http.McpEndpoint,
) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert (await endpoint.handle(post(ping, host="mcp.example"))).status == 421
    with override_settings(ALLOWED_HOSTS=["mcp.example"]):
        assert (await endpoint.handle(post(ping, host="mcp.example"))).status == 200
        assert (await endpoint.handle(post(ping, host="127.0.0.1:8000"))).status == 421
    assert (await endpoint.handle(post(ping, host="mcp.example"))).status == 421
    assert (await endpoint.handle(post(ping, client="192.0.2.7"))).status == 403
    assert (await endpoint.handle(post(ping, client="127.0.0.1"))).status == 200

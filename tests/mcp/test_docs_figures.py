"""The MCP surface the docs describe is the one the running server lists.

README.md and docs/*.md quote tool counts, lists of tools, the tool sets and the resource
URIs. Those are read from the docs' own text here (nothing is copied into this file) and
compared with what real `manage.py serve` processes list over /mcp to the SDK client:

- "N tools" followed by a list of tools: N is the list's length, and the list is the one
  the paragraph talks about: the tools `MCP_READ_ONLY` removes (a full server's listing
  minus a read-only server's), or what `tools/list` gives on a default server. A count in
  any other context fails, so a new figure is added here before it can drift;
- a list of tool sets (three or more backticked names, two of them sets, in a paragraph
  about tool sets): every set the server knows, `core` implied;
- resource URIs: each `scheme://...` pattern matches a template the server lists, each
  concrete URI of a scheme the server serves is a listed resource or fits a template, and
  a paragraph that enumerates the resources ("Resources:", `resources/list`,
  `resources/templates/list`) names every one; "No prompts" means `prompts/list` is
  refused.

docs/MCP.md's per-tool catalogue is generated and checked by tests/mcp/test_tool_descriptions.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import MCPError

from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    mcp_client,
    post,
    rpc,
    running_server,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

COUNT = re.compile(r"(?<!× )\b(\d+) tools\b")
# Backticked names separated by commas, slashes or and/or: `a`, `b` and `c`.
RUN = re.compile(r"`[a-z_]+`(?:\s*(?:,|/|,?\s+and|,?\s+or)\s*`[a-z_]+`)+")
NAME = re.compile(r"`([a-z_]+)`")
URI = re.compile(r"`([a-z]+://[^`\s]*)`")
CATALOGUE_TOTAL = re.compile(r"^\| \| \*\*total\*\*")


@dataclass(frozen=True)
class Paragraph:
    doc: str
    text: str

    def __str__(self) -> str:
        return f"{self.doc}: {self.text[:160]}"


def paragraphs() -> Iterator[Paragraph]:
    """Every paragraph of the docs, one line each (a table row is a paragraph)."""
    for path in DOCS:
        block: list[str] = []
        for line in [*path.read_text().splitlines(), ""]:
            if line.startswith("|") or not line.strip():
                if block:
                    yield Paragraph(path.name, " ".join(block))
                    block = []
                if line.startswith("|"):
                    yield Paragraph(path.name, line)
            else:
                block.append(line.strip())


def runs(text: str) -> list[list[str]]:
    return [NAME.findall(match.group()) for match in RUN.finditer(text)]


@dataclass
class Surface:
    sets: set[str]
    default_tools: set[str]  # a server as configured by default (no Zotero answering)
    full_tools: set[str]  # every tool set listed
    read_only_tools: set[str]  # every tool set listed, MCP_READ_ONLY=true
    resources: set[str]
    templates: set[str]
    prompts_refused: bool


def known_sets(server: LiveServer) -> set[str]:
    """The tool sets the server knows, as its refusal of an unknown one names them."""
    refused = post(f"{server.mcp_url}?toolsets=no_such_set", rpc("ping"))
    assert refused.status_code == 400, refused.text
    known = re.search(r"known: ([a-z_, ]+)", refused.json()["error"]["message"])
    assert known, refused.text
    return {name.strip() for name in known.group(1).split(",")}


async def listing(server: LiveServer) -> tuple[set[str], set[str], set[str], bool]:
    async with mcp_client(server.mcp_url) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        resources = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
        try:
            await client.list_prompts()
            refused = False
        except MCPError:
            refused = True
    return tools, resources, templates, refused


@pytest.fixture(scope="module")
def every_set_env(library_server: LiveServer) -> dict[str, str]:
    return {"MCP_TOOLSETS": ",".join(sorted(known_sets(library_server)))}


@pytest.fixture(scope="module")
def full_server(
    knowledge_base: KnowledgeBase, every_set_env: dict[str, str]
) -> Iterator[LiveServer]:
    with running_server(knowledge_base, env=every_set_env) as server:
        yield server


@pytest.fixture(scope="module")
def read_only_server(
    knowledge_base: KnowledgeBase, every_set_env: dict[str, str]
) -> Iterator[LiveServer]:
    env = {**every_set_env, "MCP_READ_ONLY": "true"}
    with running_server(knowledge_base, env=env) as server:
        yield server


@pytest.fixture(scope="module")
async def surface(
    library_server: LiveServer, full_server: LiveServer, read_only_server: LiveServer
) -> Surface:
    default_tools, *_ = await listing(library_server)
    full_tools, resources, templates, refused = await listing(full_server)
    read_only_tools, *_ = await listing(read_only_server)
    return Surface(
        known_sets(library_server), default_tools, full_tools, read_only_tools,
        resources, templates, refused,
    )  # fmt: skip


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def tool_count_claims(surface: Surface) -> Iterator[tuple[Paragraph, int, list[str], set[str]]]:
    """(paragraph, N, the tools it lists after "N tools", what the server lists for it)."""
    for paragraph in paragraphs():
        if CATALOGUE_TOTAL.match(paragraph.text):
            continue  # the generated catalogue: tests/mcp/test_tool_descriptions.py
        for count in COUNT.finditer(paragraph.text):
            after = [run for run in runs(paragraph.text[count.end() :]) if len(run) > 1]
            listed = after[0] if after else []
            if "MCP_READ_ONLY" in paragraph.text:
                truth = surface.full_tools - surface.read_only_tools
            elif "tools/list" in paragraph.text:
                truth = surface.default_tools
            else:
                raise AssertionError(
                    f"{paragraph}: '{count.group()}' is a count this test does not know how to "
                    "check; say what it counts here (tests/mcp/test_docs_figures.py) or drop it"
                )
            yield paragraph, int(count.group(1)), listed, truth


async def test_tool_counts_and_lists_are_what_the_server_lists(surface: Surface) -> None:
    claims = list(tool_count_claims(surface))
    assert claims, "no 'N tools' in the docs: this test would check nothing"
    wrong = []
    for paragraph, count, listed, truth in claims:
        if count != len(truth) or (listed and set(listed) != truth):
            wrong.append(
                f"{paragraph}\n  says {count} tools, lists {len(listed)}; the server: "
                f"{len(truth)}; missing {sorted(truth - set(listed))}, "
                f"not listed by the server {sorted(set(listed) - truth)}"
            )
    assert not wrong, "\n".join(wrong)


async def test_tool_set_lists_name_every_set(surface: Surface) -> None:
    lists = []
    for paragraph in paragraphs():
        if not re.search(r"tool sets?|MCP_TOOLSETS", paragraph.text):
            continue
        for run in runs(paragraph.text):
            if len(run) >= 3 and len(set(run) & surface.sets) >= 2:
                lists.append((paragraph, set(run)))
    assert lists, "no list of tool sets in the docs: this test would check nothing"
    wrong = [
        f"{paragraph}\n  names {sorted(named)}; the server's sets: {sorted(surface.sets)}"
        for paragraph, named in lists
        if named | {"core"} != surface.sets
    ]
    assert not wrong, "\n".join(wrong)


def template_pattern(template: str) -> re.Pattern[str]:
    """A server template (`paper://{paper_id}/passages{?page}`) as a regex for URIs."""
    regex = []
    for part in re.split(r"(\{\??[a-z_,]+\})", template):
        if part.startswith("{?"):
            regex.append(r"(\?.*)?")
        elif part.startswith("{"):
            regex.append("[^/?]+")
        else:
            regex.append(re.escape(part))
    return re.compile("".join(regex))


def shape(template: str) -> str:
    """A template with its variables unnamed and its query left out: the docs may call
    `{paper_id}` `{id}` and write `{?page}` as `?page=N`."""
    template = re.sub(r"\{\?[a-z_,]+\}|\?.*$", "", template)
    return re.sub(r"\{[a-z_]+\}", "{}", template)


def doc_patterns(quoted: str) -> list[str]:
    """A docs pattern as the server templates it stands for: `.../summary[/{template}]` is
    two, `paper://{paper_id}/...` any template under that prefix."""
    optional = re.fullmatch(r"(.*)\[(.*)\](.*)", quoted)
    if optional:
        return [optional.group(1) + optional.group(3), "".join(optional.groups())]
    return [quoted]


async def test_resource_uris_are_what_the_server_lists(surface: Surface) -> None:
    schemes = {uri.split("://")[0] for uri in surface.resources | surface.templates}
    patterns = [template_pattern(t) for t in surface.templates]
    shapes = {shape(t) for t in surface.templates}
    wrong = []
    checked = 0
    for paragraph in paragraphs():
        quoted = [u for u in URI.findall(paragraph.text) if u.split("://")[0] in schemes]
        for uri in quoted:
            checked += 1
            for form in doc_patterns(uri):
                if form.endswith("/..."):
                    prefix = shape(form[: -len("...")])
                    ok = any(t.startswith(prefix) for t in shapes)
                elif "{" in form:
                    ok = shape(form) in shapes
                else:
                    ok = form in surface.resources or any(p.fullmatch(form) for p in patterns)
                if not ok:
                    wrong.append(f"{paragraph}\n  `{form}` is not served")
        text = paragraph.text
        if text.startswith("Resources:") or "--method resources/templates/list" in text:
            named = {shape(form) for uri in quoted for form in doc_patterns(uri)}
            missing = sorted(t for t in surface.templates if shape(t) not in named)
            if missing:
                wrong.append(f"{paragraph}\n  leaves out the templates {missing}")
        if text.startswith("Resources:") or "--method resources/list" in text:
            missing = sorted(surface.resources - set(quoted))
            if missing:
                wrong.append(f"{paragraph}\n  leaves out the resources {missing}")
        if "No prompts" in text and not surface.prompts_refused:
            wrong.append(f"{paragraph}\n  says no prompts, but prompts/list answers")
    assert checked, "no resource URI in the docs: this test would check nothing"
    assert not wrong, "\n".join(wrong)

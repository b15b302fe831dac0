"""check_retractions over /mcp through the MCP SDK's own client, against a real server
process, with Crossref and OpenAlex served locally in their documented shapes
(tests/fixtures/retractions): the Lancet 1998 paper, filed in project NLP Reading, is
retracted by a notice whose `update-to` names it.

With a broker (the PostgreSQL + Redis run) the server's engine calls and the scheduled
task `projects.check_retractions_due` go to a Celery worker of this module's own (its own
queues, so it sees the local server's URLs); on the embedded default they run in-process.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.celery_worker import CeleryWorker
from tests.engines.replay import ReplayServer, Reply
from tests.mcp.builders import run, settings_module
from tests.mcp.conftest import (
    ROOT,
    SEED_SCRIPT,
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

BROKER = not settings.CELERY_TASK_ALWAYS_EAGER
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "retractions"
WORK = "10.1016/s0140-6736(97)11096-0"
NOTICE = "10.1016/s0140-6736(10)60175-4"
ADD_PAPER = f"""
import json, os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
django.setup()
from papers.schemas import PaperRecord
from papers.services import paper_upsert
from projects.selectors import project_get
from projects.services import project_add_papers
paper, _ = paper_upsert(record=PaperRecord.build(
    title="Ileal-lymphoid-nodular hyperplasia, non-specific colitis, and pervasive "
    "developmental disorder in children", authors=["Andrew J. Wakefield"], year=1998,
    venue="The Lancet", doi="{WORK}"))
project_add_papers(project=project_get(ref="NLP Reading"), paper_ids=[paper.pk])
print(json.dumps({{"paper_id": paper.pk}}))
"""
RUN_SCHEDULED_TASK = """
import json, os, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
django.setup()
from core.tasks import registered_task
from papers.models import Paper
from projects.models import Alert
# As if never checked (whatever the tool tests did before).
Paper.objects.update(retraction_checked_at=None, retraction_status="", retraction_notices=[])
Alert.objects.all().delete()
answer = registered_task("projects.check_retractions_due").apply_async().get(timeout=90)
keys = sorted(Alert.objects.values_list("key", flat=True))
flagged = list(Paper.objects.exclude(retraction_status="").values_list("pk", flat=True))
print(json.dumps({"answer": answer, "alerts": keys, "flagged": flagged}))
"""


def fixture(name: str) -> Reply:
    return Reply(200, json.loads((FIXTURES / name).read_text()))


@dataclass
class Setup:
    kb: KnowledgeBase
    server: LiveServer
    sources: ReplayServer
    paper_id: int

    async def call(self, tool: str, **arguments: Any) -> Any:
        async with mcp_client(self.server.mcp_url) as client:
            result = await client.call_tool(tool, arguments)
        data = tool_data(result)
        assert data is not None, result
        return data


def crossref(request: Any) -> Reply:
    wanted = request.query.get("filter", [""])[0]
    if wanted.startswith("updates:") and f"updates:{WORK}" in wanted.split(","):
        return fixture("crossref_notices_update_to.json")
    return fixture("crossref_empty.json")


@contextlib.contextmanager
def own_worker(directory: Path, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """With a broker: this module's settings (own queues) and a worker on them."""
    if not BROKER:
        yield {}
        return
    queue = f"retract-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    module = settings_module(directory, queue)
    extra = {"DJANGO_SETTINGS_MODULE": module, "PYTHONPATH": f"{ROOT}{os.pathsep}{directory}"}
    worker = CeleryWorker(
        directory, {**env, **extra}, queues=f"{queue},{queue}-engines", name=f"w-{queue}"
    ).start()
    try:
        yield extra
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    directory = tmp_path_factory.mktemp("retractions-kb")
    sources = ReplayServer().start()
    sources.add("/crossref/works", crossref)
    sources.add("/openalex/works", fixture("openalex_not_retracted.json"))
    try:
        with server_database("mcp_retract") as database_url:
            env = base_env(directory, database_url)
            env.update(
                ENGINES_ENABLED="crossref,openalex",
                CROSSREF_API_URL=f"{sources.url}/crossref",
                OPENALEX_API_URL=f"{sources.url}/openalex",
                ENGINE_MAX_RETRIES="0",
                RETRACTION_CHECK_ON_IMPORT="false",
                EMBEDDINGS_ENABLED="false",
            )
            data = json.loads(run(env, str(SEED_SCRIPT)).strip().splitlines()[-1])
            paper_id = json.loads(run(env, "-c", ADD_PAPER).strip().splitlines()[-1])["paper_id"]
            with own_worker(directory, env) as extra:
                kb = KnowledgeBase(directory, {**env, **extra}, data)
                with running_server(kb) as server:
                    yield Setup(kb, server, sources, paper_id)
    finally:
        sources.stop()


async def test_check_retractions_is_a_listed_open_world_write_tool(setup: Setup) -> None:
    async with mcp_client(setup.server.mcp_url, mode="auto") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["check_retractions"]
    assert tool.annotations and tool.annotations.read_only_hint is False
    assert tool.annotations.open_world_hint is True
    assert set(tool.input_schema["properties"]) == {"project_id"}


async def test_check_retractions_flags_the_project_paper_and_every_view_shows_it(
    setup: Setup,
) -> None:
    nlp = setup.kb.project("nlp")
    answer = await setup.call("check_retractions", project_id=nlp)

    # NLP Reading holds two papers with a DOI (attention, and the Lancet paper).
    assert (answer["checked"], answer["failed"]) == (2, 0)
    assert [(p["paper_id"], p["status"], p["notice"]) for p in answer["flagged"]] == [
        (setup.paper_id, "retracted", NOTICE)
    ]
    assert answer["alerts_raised"] == 1

    details = await setup.call("get_paper_details", paper_id=setup.paper_id)
    assert details["retraction"] == "retracted"
    assert details["retraction_notices"][0]["doi"] == NOTICE
    results = (await setup.call("search_papers", query="colitis", engines="local"))["results"]
    assert [r.get("retraction") for r in results if r["paper_id"] == setup.paper_id] == [
        "retracted"
    ]
    attention = setup.kb.paper("attention")["paper_id"]
    assert "retraction" not in await setup.call("get_paper_details", paper_id=attention)
    bibtex = (await setup.call("export_paper_bibtex", paper_id=setup.paper_id))["bibtex"]
    assert f"note = {{Retracted: {NOTICE}}}" in bibtex

    again = await setup.call("check_retractions", project_id=nlp)
    assert again["alerts_raised"] == 0 and len(again["flagged"]) == 1


async def test_an_unknown_project_is_a_clear_error(setup: Setup) -> None:
    async with mcp_client(setup.server.mcp_url) as client:
        result = await client.call_tool("check_retractions", {"project_id": "no-such-project"})
    assert result.is_error
    assert json.loads(result.content[0].text)["error"]["code"] == "not_found"


async def test_the_scheduled_task_checks_what_is_due_and_alerts_the_project(
    setup: Setup,
) -> None:
    """Through the worker with a broker: the task and its engine calls run there."""
    done = json.loads(run(setup.kb.env, "-c", RUN_SCHEDULED_TASK).strip().splitlines()[-1])
    # The papers with a DOI: attention and the Lancet paper.
    assert done["answer"] == {
        "checked": 2, "failed": 0, "flagged": 1, "remaining": 0, "alerts_raised": 1
    }  # fmt: skip
    assert done["flagged"] == [setup.paper_id]
    assert done["alerts"] == [f"retraction:{setup.paper_id}:{setup.kb.project('nlp')}"]

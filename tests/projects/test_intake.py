"""search_everywhere with search strings (docs/SEARCH-STRINGS.md): each engine is sent the
string in its own dialect, the library its own translation, and every engine's status is
the search log (the query sent, when, the records returned and the source's total).
Plugin engines calling a local server record what they received."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.errors import InvalidInput
from engines.base import SearchRequest
from engines.registry import registry
from engines.services import engine_searches, engines_search
from projects.intake import search_everywhere
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply

pytestmark = pytest.mark.django_db

# Ids of their own per run: with REDIS_URL the engines cache outlives a test run.
PUBMED_LIKE = f"sl_pubmed_{uuid.uuid4().hex[:8]}"
PLAIN = f"sl_plain_{uuid.uuid4().hex[:8]}"
WRITTEN = "(bert[tiab] OR elmo[tiab]) AND attention NOT vision AND 2018:2020[dp]"
BERT = {"title": "BERT for attention studies", "authors": ["J Devlin"], "year": 2019,
        "doi": "10.9999/sl.bert"}  # fmt: skip
ELMO = {"title": "ELMo and attention", "authors": ["M Peters"], "year": 2018,
        "doi": "10.9999/sl.elmo"}  # fmt: skip


@pytest.fixture
def engines(settings: Any, tmp_path: Path, replay_server: ReplayServer) -> Iterator[ReplayServer]:
    settings.ENGINES_DIR = tmp_path / "engines"
    settings.ENGINES_ENABLED = [PUBMED_LIKE, PLAIN]
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a worker would not see this folder
    settings.EMBEDDINGS_ENABLED = False
    for engine_id, dialect in ((PUBMED_LIKE, "pubmed"), (PLAIN, "plain")):
        base = f"{replay_server.url}/{engine_id}"
        write_plugin(settings.ENGINES_DIR, engine_id, base, query_dialect=dialect)
    replay_server.add(f"/{PUBMED_LIKE}/search", Reply(200, {"results": [BERT], "total": 1234}))
    replay_server.add(f"/{PLAIN}/search", Reply(200, [ELMO]))
    registry.refresh()
    yield replay_server
    registry.refresh()


def received(server: ReplayServer, engine_id: str) -> dict[str, str]:
    """What the engine was asked: its query and the request's dates."""
    [request] = [r for r in server.requests if r.path == f"/{engine_id}/search"]
    return {key: values[0] for key, values in request.query.items() if key != "n"}


def test_each_engine_is_sent_the_search_string_in_its_own_dialect(
    engines: ReplayServer,
) -> None:
    page = search_everywhere(query=WRITTEN, engines=["local", PUBMED_LIKE, PLAIN], limit=5)

    pubmed_query = "(((bert[tiab] OR elmo[tiab]) AND attention) NOT vision) AND 2018:2020[dp]"
    assert received(engines, PUBMED_LIKE) == {"q": pubmed_query, "date_from": "", "date_to": ""}
    # Keywords only: the date range reaches it as the request's, the NOT part is left out.
    assert received(engines, PLAIN) == {
        "q": "bert elmo attention", "date_from": "2018", "date_to": "2020",
    }  # fmt: skip
    assert page.engines[PUBMED_LIKE].query_sent == pubmed_query
    assert page.engines[PLAIN].query_sent == "bert elmo attention"
    assert page.engines["local"].query_sent == "((bert OR elmo) AND attention) NOT vision"
    assert f"{PLAIN}: keywords only: NOT parts left out." in page.notes
    assert any(note.startswith("local: the library searches") for note in page.notes)
    assert {result.title for result in page.results} == {BERT["title"], ELMO["title"]}


def test_the_search_log_says_when_how_many_and_the_source_total(engines: ReplayServer) -> None:
    before = datetime.now(UTC) - timedelta(seconds=1)
    page = search_everywhere(query=WRITTEN, engines=[PUBMED_LIKE, PLAIN], limit=5)
    pubmed, plain = page.engines[PUBMED_LIKE], page.engines[PLAIN]
    assert "local" not in page.engines
    assert not any(note.startswith("local:") for note in page.notes)  # it was not searched
    assert (pubmed.count, pubmed.total) == (1, 1234)
    assert (plain.count, plain.total) == (1, None)  # the source did not say
    for status in (pubmed, plain):
        assert status.searched_at is not None
        searched = datetime.fromisoformat(status.searched_at)
        assert searched.tzinfo is not None and before <= searched <= datetime.now(UTC)


def test_a_cached_answer_keeps_the_time_the_source_gave_it(
    engines: ReplayServer, settings: Any
) -> None:
    settings.ENGINE_CACHE_TTLS = {PUBMED_LIKE: 3600}
    first = search_everywhere(query=WRITTEN, engines=[PUBMED_LIKE], limit=5)
    again = search_everywhere(query=WRITTEN, engines=[PUBMED_LIKE], limit=5)
    assert (again.engines[PUBMED_LIKE].model_extra or {}).get("cached") is True
    assert again.engines[PUBMED_LIKE].searched_at == first.engines[PUBMED_LIKE].searched_at
    assert again.engines[PUBMED_LIKE].total == 1234
    assert len([r for r in engines.requests if r.path.endswith("/search")]) == 1


def test_a_plain_question_reaches_every_engine_unchanged(engines: ReplayServer) -> None:
    question = "How do transformers use attention (survey)?"
    page = search_everywhere(query=question, engines=["local", PUBMED_LIKE, PLAIN], limit=5)
    assert received(engines, PUBMED_LIKE)["q"] == question
    assert received(engines, PLAIN)["q"] == question
    assert page.engines[PLAIN].query_sent == question
    assert page.engines["local"].query_sent == question
    assert not any(note.startswith((PLAIN, PUBMED_LIKE)) for note in page.notes)


def test_a_malformed_search_string_is_refused_before_any_engine_is_asked(
    engines: ReplayServer,
) -> None:
    with pytest.raises(InvalidInput, match=r"mixed with AND or NOT.*\(at character 20\)"):
        search_everywhere(query="bert[tiab] OR elmo AND x", engines=[PLAIN], limit=5)
    assert not engines.requests


def test_strict_mode_refuses_an_engine_that_would_drop_a_constraint(
    engines: ReplayServer,
) -> None:
    request = SearchRequest(query=WRITTEN, max_results=5)
    searches = engine_searches(engine_ids=[PUBMED_LIKE, PLAIN], request=request, strict=True)
    assert [call.engine for call in searches.calls] == [PUBMED_LIKE]
    result = engines_search(calls=searches.calls, local=None, save=False, refused=searches.refused)
    refused = result.engines[PLAIN]
    assert (refused["status"], refused["reason"]) == ("unsupported", "query_untranslatable")
    assert "NOT parts left out" in refused["message"]
    assert "query_sent" not in refused
    assert result.engines[PUBMED_LIKE]["status"] == "ok"
    assert received(engines, PUBMED_LIKE)["q"].startswith("(((bert[tiab]")
    assert not [r for r in engines.requests if r.path.startswith(f"/{PLAIN}/")]


def test_the_string_s_dates_narrow_the_request_s(engines: ReplayServer) -> None:
    search_everywhere(query=WRITTEN, engines=[PLAIN], limit=5, date_from="2019-03")
    assert received(engines, PLAIN)["date_from"] == "2019-03"
    assert received(engines, PLAIN)["date_to"] == "2020"
    with pytest.raises(InvalidInput, match="do not overlap"):
        search_everywhere(query=WRITTEN, engines=[PLAIN], limit=5, date_from="2022")

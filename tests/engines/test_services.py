"""engines/services.py: which engines a search asks when it names none; what its answer says."""

from __future__ import annotations

from typing import Any

import pytest

from engines import services
from engines.base import SEARCH, BaseSearchEngine, SearchRequest
from engines.registry import LOCAL_ENGINE
from engines.runner import EngineCall, EngineOutcome
from papers.schemas import PaperRecord, record_as_dict


def engine(engine_id: str, *, default: bool = True) -> BaseSearchEngine:
    kind = type(
        f"Engine_{engine_id}",
        (BaseSearchEngine,),
        {"id": engine_id, "name": engine_id, "in_default_search": default},
    )
    return kind()


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> None:
    found = {
        "broad": engine("broad"),
        "field": engine("field", default=False),
        "other": engine("other"),
    }
    monkeypatch.setattr(services.registry, "engines", lambda: dict(found))


@pytest.mark.usefixtures("engines")
def test_a_search_naming_no_engine_asks_the_default_set(settings: Any) -> None:
    settings.ENGINES_DEFAULT = []
    assert services.engine_ids_resolve(None, operation=SEARCH) == [LOCAL_ENGINE, "broad", "other"]
    # a field's own source is asked when named
    assert services.engine_ids_resolve(["field"], operation=SEARCH) == ["field"]
    # and a review may use it (what the process may search, not what it asks by default)
    assert services.engines_available(operation=SEARCH) == [
        LOCAL_ENGINE, "broad", "field", "other",
    ]  # fmt: skip


@pytest.mark.usefixtures("engines")
def test_engines_default_setting_replaces_the_engines_own_choice(settings: Any) -> None:
    settings.ENGINES_DEFAULT = ["field", "other"]
    assert services.engine_ids_resolve(None, operation=SEARCH) == [LOCAL_ENGINE, "field", "other"]


def test_results_of_several_sources_are_ordered_by_fused_relevance() -> None:
    # paper 1: first on one source; paper 2: second on two sources; 3 and 4: one source each
    ranks = {1: {"pubmed": 1}, 2: {"pubmed": 2, "europepmc": 2}, 3: {"europepmc": 1},
             4: {"europepmc": 3}}  # fmt: skip
    interleaved = [1, 3, 2, 4]  # by rank, then engine order: what the answer showed before
    # 2 is ranked high by both sources: it comes first; the rest keep their order
    assert services.fused_order(interleaved, ranks) == [2, 1, 3, 4]
    # one source alone: its own relevance order, untouched
    single = {paper: {"pubmed": rank} for rank, paper in enumerate([7, 5, 6], start=1)}
    assert services.fused_order([7, 5, 6], single) == [7, 5, 6]


def test_an_author_search_names_the_person_each_engine_took_the_name_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DBLP (like OpenAlex and Semantic Scholar) returns the papers of the person its own
    author search ranks first: the answer says who, or another person's papers would pass
    for the author's."""
    person = {
        "dblp_pid": "10/3248",
        "name": "Geoffrey E. Hinton",
        "url": "https://dblp.org/pid/10/3248",
    }
    paper = PaperRecord.build(
        title="Targeted Dropout", source="dblp", source_id="conf/x/G18",
        metadata={"author_match": {**person, "affiliation": ""}},
    )  # fmt: skip
    request = SearchRequest(query="G. Hinton", max_results=5)
    calls = [
        EngineCall.author("dblp", "G. Hinton", request),
        EngineCall.author("pubmed", "G. Hinton", request),
    ]
    outcomes = [
        EngineOutcome("dblp", "ok", result=[record_as_dict(paper)]),
        EngineOutcome("pubmed", "ok", result=[]),
    ]

    class Answered:
        def wait(self) -> list[EngineOutcome]:
            return outcomes

    monkeypatch.setattr(services, "start_calls", lambda calls: Answered())
    answer = services.engines_search(calls=calls, local=None, save=False)
    assert answer.engines["dblp"]["author_match"] == person  # empty values left out
    assert "author_match" not in answer.engines["pubmed"]

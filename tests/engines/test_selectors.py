"""engines/selectors.py: what list_search_engines says of each engine."""

from __future__ import annotations

from typing import Any

import pytest

from engines import selectors
from engines.base import BaseSearchEngine


def engine(engine_id: str, *, default: bool) -> BaseSearchEngine:
    kind = type(
        f"Engine_{engine_id}",
        (BaseSearchEngine,),
        {"id": engine_id, "name": engine_id, "in_default_search": default},
    )
    return kind()


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> None:
    found = {"broad": engine("broad", default=True), "field": engine("field", default=False)}
    monkeypatch.setattr(selectors.registry, "engines", lambda: dict(found))


@pytest.mark.usefixtures("engines")
def test_an_engine_asked_only_when_named_says_so(settings: Any) -> None:
    """A search naming no engines leaves out a field's own source (PubMed, DBLP ...): the
    listing says which, or an agent would expect them in such a search."""
    settings.ENGINES_DEFAULT = []
    listed = {e["id"]: e for e in selectors.engines_list(probe=False)["engines"]}
    assert "in_default_search" not in listed["broad"] and "in_default_search" not in listed["local"]
    assert listed["field"]["in_default_search"] is False
    settings.ENGINES_DEFAULT = ["field"]
    listed = {e["id"]: e for e in selectors.engines_list(probe=False)["engines"]}
    assert (
        listed["broad"]["in_default_search"] is False and "in_default_search" not in listed["field"]
    )

"""engines/services.py: which engines a search asks when it names none."""

from __future__ import annotations

from typing import Any

import pytest

from engines import services
from engines.base import SEARCH, BaseSearchEngine
from engines.registry import LOCAL_ENGINE


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

"""A review question or a saved search's query may be as long as any query the search tools
take (settings.MAX_QUERY_CHARS, e.g. a pasted abstract): stored whole on both databases
(PostgreSQL refused anything past 500 characters with a database error before), and one
character more is a clear refusal."""

from __future__ import annotations

import pytest
from django.conf import settings

from core.errors import InvalidInput
from projects.models import ReviewSession, SavedSearch
from projects.review import services as reviews
from projects.watch.services import saved_search_save

pytestmark = pytest.mark.django_db


def long_text(length: int) -> str:
    words = "sparse attention lets transformer encoders read lengthy scientific documents "
    return (words * (length // len(words) + 1))[:length].strip()


def test_a_review_question_as_long_as_a_search_query_is_stored_whole() -> None:
    question = long_text(settings.MAX_QUERY_CHARS)
    session = reviews.review_start(query=question)
    assert ReviewSession.objects.get(pk=session.pk).query == question
    with pytest.raises(InvalidInput):
        reviews.review_start(query=question + " words")


def test_a_saved_search_query_as_long_as_a_search_query_is_stored_whole() -> None:
    query = long_text(settings.MAX_QUERY_CHARS)
    saved_search_save(name="long", query=query, engines=["local"], schedule="manual")
    assert SavedSearch.objects.get(name="long").query == query

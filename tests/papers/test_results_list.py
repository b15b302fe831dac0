"""The searched Paper list as results to read (issue 36): each row's full title links to
the reading page, with authors, short venue, year, markers and the passage search_papers
gives, highlighted and escaped; a corrected typo is said; the page is titled by the search."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from papers.models import Paper, PaperPdf, Venue
from papers.search.local import local_search

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/papers/paper/"
TITLE_LINK = re.compile(r'class="result-title" href="/admin/papers/paper/(\d+)/read/"')
ABSTRACT = (
    "We propose the Transformer, a network architecture based solely on attention "
    "mechanisms, dispensing with recurrence and convolutions entirely."
)


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> dict[str, Paper]:
    long_title = (
        "Attention Is All You Need: a very long title that goes on well past ninety "
        "characters to check that nothing cuts it short"
    )
    attention = make_paper(
        long_title, abstract=ABSTRACT, year=2017, venue="Advances in Neural Information",
        authors=["Ashish Vaswani", "Noam Shazeer", "Niki Parmar", "Jakob Uszkoreit"],
    )  # fmt: skip
    Venue.objects.filter(papers=attention).update(short_name="neurips")
    PaperPdf.objects.create(
        paper=attention, file_name="attention.pdf", sha256="0" * 64, size=10, page_count=1,
        origin=PaperPdf.Origin.UPLOADED,
    )  # fmt: skip
    retracted = make_paper(
        "Recurrent attention for images", abstract="Attention over image regions.",
        year=2014, authors=["Volodymyr Mnih"],
    )  # fmt: skip
    Paper.objects.filter(pk=retracted.pk).update(retraction_status="retracted")
    hostile = make_paper(
        "<script>alert('x')</script> Attention hijacked",
        abstract="Attention <img src=x onerror=alert(1)> and **bold** claims.",
        year=2020, authors=["Mallory"],
    )  # fmt: skip
    return {"attention": attention, "retracted": retracted, "hostile": hostile}


def test_each_result_reads_as_a_result(admin_client: Client, library: dict[str, Paper]) -> None:
    response = admin_client.get(CHANGELIST, {"q": "attention mechanisms"})
    page = response.content.decode()
    attention = library["attention"]
    assert response.context["title"] == "Search: attention mechanisms"
    assert "<title>Search: attention mechanisms" in page
    assert "Select paper to change" not in page
    assert "Ordered by relevance." in page
    # The full title, to the reading page; the edit form one link away.
    assert f'href="/admin/papers/paper/{attention.pk}/read/">{attention.title}</a>' in page
    assert f'class="result-edit" href="/admin/papers/paper/{attention.pk}/change/"' in page
    assert "Ashish Vaswani, Noam Shazeer, Niki Parmar et al. · NEURIPS · 2017" in page
    assert "Jakob Uszkoreit" not in page
    assert "<mark>attention</mark> <mark>mechanisms</mark>" in page
    row = page[page.index(f"/{attention.pk}/read/") :]
    assert row.index("result-pdf") < row.index("</tr>")
    retracted_row = page[page.index(f"/{library['retracted'].pk}/read/") :]
    assert 'result-retraction">Retracted</span>' in retracted_row[: retracted_row.index("</tr>")]
    assert "sortable" not in page  # relevance is the order: no column to sort by
    assert 'name="_selected_action"' in page and 'name="action"' in page


def test_the_list_has_search_papers_order_and_passages(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    query = "attention images"
    page = admin_client.get(CHANGELIST, {"q": query}).content.decode()
    hits = local_search(query=query, limit=10).hits
    assert [int(pk) for pk in TITLE_LINK.findall(page)] == [h.record["paper_id"] for h in hits]
    for hit in hits:
        passage = hit.snippet_markdown.replace("**", "")
        assert passage.split()[0] in page


def test_a_hostile_title_and_abstract_stay_text(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    page = admin_client.get(CHANGELIST, {"q": "hijacked attention"}).content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; Attention hijacked</a>" in page
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "**bold**" in page  # the paper's own asterisks, not emphasis


def test_a_corrected_typo_is_said_with_a_way_back(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    response = admin_client.get(CHANGELIST, {"q": "recurent"})
    page = response.content.decode()
    assert "Showing results for <strong>recurrent</strong>" in page
    assert "Search instead for recurent" in page
    listed = [int(pk) for pk in TITLE_LINK.findall(page)]
    found = local_search(query="recurent")
    assert listed == [hit.record["paper_id"] for hit in found.hits]
    assert found.notes[-1].endswith(", for: recurrent")  # what search_papers says
    assert listed[0] == library["retracted"].pk
    assert "<mark>Recurrent</mark>" in page
    exact = admin_client.get(CHANGELIST, {"q": "recurent", "exact": "1"})
    assert exact.status_code == 200
    assert list(exact.context["cl"].result_list) == []
    assert "Showing results for" not in exact.content.decode()


def test_the_unsearched_list_is_titled_papers_and_its_titles_lead_to_reading(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    response = admin_client.get(CHANGELIST)
    page = response.content.decode()
    assert response.context["title"] == "Papers"
    assert "Select paper to change" not in page
    attention = library["attention"]
    assert len(attention.title) > 90  # shown whole
    assert f'href="/admin/papers/paper/{attention.pk}/read/">{attention.title}</a>' in page
    assert f'href="/admin/papers/paper/{attention.pk}/change/"' in page  # by its id
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; Attention hijacked" in page
    assert "<script>alert" not in page


def test_a_searched_page_costs_the_same_queries_at_any_length(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    def queries() -> int:
        admin_client.get(CHANGELIST, {"q": "attention"})  # warm caches (vocabulary, session)
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(CHANGELIST, {"q": "attention"}).status_code == 200
        # The semantic tier's check for vectors is cached for a while by the search, so it
        # falls in one request or another; it is one query whatever the page's length.
        return sum("papers_paperembedding" not in q["sql"] for q in captured.captured_queries)

    for n in range(3):  # enough exact matches that no typo-tolerant search is added
        make_paper(f"Attention paper {n}", authors=[f"A {n}"], year=2001)
    few = queries()
    for n in range(12):
        make_paper(f"Attention study {n}", authors=[f"Author {n}", "B", "C", "D"], year=2002)
    assert queries() == few


def test_a_bulk_action_still_acts_on_the_searched_list(
    admin_client: Client, library: dict[str, Paper]
) -> None:
    response = admin_client.post(
        CHANGELIST + "?q=attention",
        {"action": "add_keywords", "_selected_action": [library["attention"].pk],
         "keywords": "transformers", "apply": "1"},
    )  # fmt: skip
    assert response.status_code in (200, 302)
    assert list(library["attention"].keywords.values_list("name", flat=True)) == ["transformers"]

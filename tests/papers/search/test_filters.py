"""Payload filters (glob patterns, link tables, scope), on the real database."""

# ruff: noqa: F811  (the imported fixture is a parameter of the tests below)
from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.models import F, Q

from core.errors import InvalidInput
from papers.identifiers import fold_key
from papers.models import Author, Paper, PaperPdf
from papers.search.filters import (
    GlobLike,
    apply_filters,
    authors_matching,
    filters_from_payload,
    glob_to_like,
    like_prefix,
)
from papers.search.types import SearchFilters
from papers.selectors import papers_in_scope
from tests.papers.search.builders import library  # noqa: F401

pytestmark = pytest.mark.django_db


def matching(payload: dict[str, Any], scope: list[str] | None = None) -> set[str]:
    filters = filters_from_payload(payload)
    queryset = apply_filters(papers_in_scope(scope), filters, scope=scope)
    return set(queryset.values_list("title", flat=True))


# --- glob translation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "like"),
    [
        ("Findings*", "Findings%"),
        ("?LP", "_LP"),
        ("50%_off", "50\\%\\_off"),
        ("a\\b*", "a\\\\b%"),
        ("literal\\*star", "literal*star"),
    ],
)
def test_glob_becomes_an_escaped_like_pattern(glob: str, like: str) -> None:
    assert glob_to_like(glob) == like


# --- payload parsing --------------------------------------------------------------


def test_unknown_filter_key_lists_the_allowed_keys() -> None:
    with pytest.raises(InvalidInput) as caught:
        filters_from_payload({"venue": "ACL", "journal": "x"})
    assert "journal" in caught.value.message
    assert "venue" in caught.value.message and "has_pdf" in caught.value.message
    assert caught.value.details["unknown"] == ["journal"]


@pytest.mark.parametrize(
    "payload",
    [
        {"year": "twenty"},
        {"year": 999},
        {"year": True},
        {"year_from": 2022, "year_to": 2020},
        {"year": "2023-2021"},
        {"year": [2020]},
        {"has_pdf": "yes"},
        {"venue": ""},
        {"venue": ["ACL", "EMNLP"]},
        {"author": "x" * 501},
    ],
)
def test_bad_filter_values_are_invalid_input(payload: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        filters_from_payload(payload)


def test_year_forms_and_doi_normalisation() -> None:
    assert filters_from_payload({"year": 2020}) == SearchFilters(year=2020)
    assert filters_from_payload({"year": "2019-2021"}) == SearchFilters(
        year_from=2019, year_to=2021
    )
    assert filters_from_payload({"year": [2019, None]}) == SearchFilters(year_from=2019)
    assert filters_from_payload({"year": {"to": 2001}}) == SearchFilters(year_to=2001)
    assert filters_from_payload({"doi": "https://doi.org/10.18653/V1/X"}).doi == "10.18653/v1/x"
    assert filters_from_payload({"has_pdf": "true", "source": None}) == SearchFilters(has_pdf=True)


# --- applying filters --------------------------------------------------------------


def test_venue_glob_and_exact_match_case_insensitively(library: dict[str, Any]) -> None:
    assert matching({"venue": "Findings*"}) == {"Prompting in the Wild"}
    assert matching({"venue": "findings*"}) == {"Prompting in the Wild"}
    assert matching({"venue": "proceedings of acl 2023"}) == {"Parsing With 50% Less Data_v2"}
    # without a wildcard the match is exact, not a substring
    assert matching({"venue": "ACL 2023"}) == set()
    assert matching({"venue": "*of acl 202?"}) == {"Parsing With 50% Less Data_v2"}


def test_url_matches_source_or_pdf_url(library: dict[str, Any]) -> None:
    assert matching({"url": "*2023.acl*"}) == {"Parsing With 50% Less Data_v2"}
    assert matching({"url": "*.pdf"}) == {"Prompting in the Wild"}
    assert matching({"url": "https://arxiv.org/pdf/2101.00001"}) == {"Vision Transformers at Scale"}


def test_like_metacharacters_in_values_are_literal(library: dict[str, Any]) -> None:
    # '%' and '_' in a pattern must not act as LIKE wildcards
    queryset = apply_filters(Paper.objects.all(), SearchFilters(url="*acl_long*"))
    assert not queryset.exists()
    titles = set(
        Paper.objects.filter(
            pk__in=apply_filters(Paper.objects.all(), SearchFilters(url="*acl-long*"))
        ).values_list("title", flat=True)
    )
    assert titles == {"Parsing With 50% Less Data_v2"}
    assert matching({"source": "a%"}) == set()
    assert matching({"source": "a*"}) == {
        "Prompting in the Wild", "Parsing With 50% Less Data_v2", "Vision Transformers at Scale",
    }  # fmt: skip


def test_author_and_institution_filters_do_not_duplicate_rows(library: dict[str, Any]) -> None:
    # Bo Li wrote two papers; a paper with two matching authors is one row
    queryset = apply_filters(Paper.objects.all(), SearchFilters(author="*"))
    assert queryset.count() == 4
    assert matching({"author": "Bo Li"}) == {
        "Prompting in the Wild", "Parsing With 50% Less Data_v2",
    }  # fmt: skip
    assert matching({"author": "ana garcia"}) == {"Prompting in the Wild"}  # accents folded
    assert matching({"author": "Rossi"}) == {"Parsing With 50% Less Data_v2"}  # family name
    assert matching({"institution": "*Edinburgh"}) == {"Prompting in the Wild"}
    assert matching({"institution": "tsinghua university"}) == {"Prompting in the Wild"}


def test_keyword_category_project_source_doi_year_and_pdf(library: dict[str, Any]) -> None:
    assert matching({"keyword": "prompting"}) == {"Prompting in the Wild"}
    assert matching({"keyword": "transformer*"}) == {
        "Vision Transformers at Scale", "Statistical Machine Translation",
    }  # fmt: skip
    assert matching({"category": "cs.?V"}) == {"Vision Transformers at Scale"}
    assert matching({"project": "nlp reading"}) == {
        "Prompting in the Wild", "Parsing With 50% Less Data_v2",
    }  # fmt: skip
    assert matching({"project": library["vision"].id}) == {"Vision Transformers at Scale"}
    assert matching({"source": "ARXIV"}) == {"Vision Transformers at Scale"}
    assert matching({"doi": "10.18653/V1/2023.FINDINGS-ACL.1"}) == {"Prompting in the Wild"}
    assert matching({"doi": "10.18653/*"}) == {"Prompting in the Wild"}
    assert matching({"year": "2020-"}) == {
        "Prompting in the Wild", "Parsing With 50% Less Data_v2", "Vision Transformers at Scale",
    }  # fmt: skip
    assert matching({"year": 2003}) == {"Statistical Machine Translation"}
    # has_pdf is a PDF stored in the library; a pdf_url alone is only has_pdf_url
    assert matching({"has_pdf": True}) == set()
    assert matching({"has_pdf_url": True}) == {
        "Prompting in the Wild", "Vision Transformers at Scale",
    }  # fmt: skip
    assert matching({"has_pdf_url": False, "year_to": 2022}) == {
        "Statistical Machine Translation",
    }  # fmt: skip
    vision = Paper.objects.get(title="Vision Transformers at Scale")
    PaperPdf.objects.create(
        paper=vision, file_name="vision.pdf", sha256="0" * 64, size=10, page_count=1,
        origin=PaperPdf.Origin.DOWNLOADED,
    )  # fmt: skip
    assert matching({"has_pdf": True}) == {"Vision Transformers at Scale"}
    assert matching({"has_pdf": True, "has_pdf_url": True}) == {"Vision Transformers at Scale"}
    assert matching({"has_pdf": False, "has_pdf_url": True}) == {"Prompting in the Wild"}
    assert matching({"venue": "Findings*", "year": 2021}) == set()


@pytest.mark.parametrize(
    ("like", "prefix"),
    [
        ("Christopher%Manning", "christopher"),
        ("%Manning", ""),
        ("Chris_", "chris"),
        ("50\\%\\_off%", "50%_off"),
        ("Zo\u00eb%", "zo"),  # SQLite's LIKE and lower() fold ASCII letters only
    ],
)
def test_the_literal_start_of_a_like_pattern(like: str, prefix: str) -> None:
    assert like_prefix(like) == prefix


AUTHORS = [
    ("Christopher D. Manning", "Manning", "Christopher D."),
    ("Chris Manning", "Manning", "Chris"),
    ("christopher manning", "manning", "christopher"),
    ("CHRISTOPHERSON Manning-Smith", "Manning-Smith", "CHRISTOPHERSON"),
    ("Manning Christopher", "Christopher Manning", ""),  # a family name the pattern matches
    ("Christophe Mannings", "Mannings", "Christophe"),
    ("\u00c9mile Zola", "Zola", "\u00c9mile"),
    ("Christophes Manning", "Manning", "Christophes"),  # the end of the range of "christopher"
    ("50%_off Group", "Group", "50%_off"),
]


@pytest.mark.parametrize(
    "pattern",
    [
        "Christopher*Manning", "christopher*", "CHRIS*", "Chris?Manning", "*Manning",
        "Manning*", "\u00c9mile*", "\u00e9mile*", "Zola*", "50%_*", "chris*",
    ],
)  # fmt: skip
def test_an_author_pattern_finds_what_a_scan_finds_through_an_index(db: None, pattern: str) -> None:
    """A pattern reads the authors its literal start allows, through an index on both
    databases (the query reading tries 'First*Last' for a full name on every search that
    holds two capitalised words), and finds exactly the authors that matching every
    author's name and family name finds."""
    for number, (name, family, given) in enumerate(AUTHORS):
        Author.objects.create(
            name=name, family_name=family, given_name=given, name_key=f"k{number}"
        )
    like = glob_to_like(pattern)
    scanned = Author.objects.filter(
        Q(GlobLike(F("name"), like)) | Q(GlobLike(F("family_name"), like))
    )
    found = authors_matching(pattern)
    assert set(found.values_list("name", flat=True)) == set(scanned.values_list("name", flat=True))
    if not like_prefix(like):
        return
    sql, params = found.values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
            assert "author_name_lower_idx" in plan and "author_family_lower_idx" in plan, plan
            assert "SCAN" not in plan, plan
        else:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = " ".join(row[0] for row in cursor.fetchall())
            assert "author_name_lower_like" in plan and "author_family_lower_like" in plan, plan


@pytest.mark.django_db
def test_a_short_given_name_finds_the_full_one_only_when_nobody_has_it() -> None:
    people = [
        ("Christopher D. Manning", "Manning", "Christopher D."),
        ("Christine Manning", "Manning", "Christine"),
        ("Chris Bishop", "Bishop", "Chris"),
    ]
    for name, family, given in people:  # fmt: skip
        Author.objects.create(
            name=name, family_name=family, given_name=given, name_key=fold_key(name)
        )

    def names(name: str) -> set[str]:
        return set(authors_matching(name).values_list("name", flat=True))

    assert names("Chris Manning") == {"Christopher D. Manning", "Christine Manning"}
    assert names("Christop Manning") == {"Christopher D. Manning"}
    assert names("Chris Bishop") == {"Chris Bishop"}
    Author.objects.create(
        name="Chris Manning", family_name="Manning", given_name="Chris", name_key="chris manning"
    )
    assert names("Chris Manning") == {"Chris Manning"}  # the name as written, when someone has it
    assert names("Xavier Manning") == set()


def test_scope_limits_results_and_the_project_filter(library: dict[str, Any]) -> None:
    scope = [library["nlp"].id]
    assert matching({"source": "*"}, scope=scope) == {
        "Prompting in the Wild", "Parsing With 50% Less Data_v2",
    }  # fmt: skip
    # a project outside the client's scope matches nothing, even for papers in scope
    assert matching({"project": "Vision"}, scope=scope) == set()
    assert matching({"project": "Vision"}, scope=["Vision"]) == {"Vision Transformers at Scale"}

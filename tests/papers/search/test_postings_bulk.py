"""The BM25 postings a bulk import writes (papers/imports.py, what `import_jsonl` and the
other import commands run) are the ones the one-paper-at-a-time path writes (a paper
added as the `add_paper` tool adds it): the same terms for each paper with the same
field-weighted frequencies, and the same lengths. Both are checked against the plain
analyzer (analysis.term_counts, one stem at a time) and the formula (postings.impact):
indexing counts terms through a word cache and computes a paper's impacts once per
distinct frequency, and must not change a number. Both databases.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from papers.imports import RawItem, import_records
from papers.models import Paper
from papers.schemas import PaperRecord
from papers.search import analysis, postings
from papers.services import papers_upsert_retrying

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).parents[2] / "fixtures" / "search" / "corpus.jsonl"
# Folding, stop words, a word in several fields and forms, a stem shared by two words.
EXTRA: dict[str, Any] = {
    "key": "folding",
    "title": "Übersetzung and Translation: Translating the Translations of Café Müller",
    "abstract": "The ﬁrst translation of the translations; a café, a CAFÉ and naïve "
    "translators. Translating is what translators do, again and again.",
    "authors": ["José Núñez", "Zoë Ångström"],
    "year": 2021,
    "venue": "Translation Studies",
    "keywords": ["translation", "café"],
}


def rows() -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    return [*lines, EXTRA]


def build(row: dict[str, Any]) -> PaperRecord:
    return PaperRecord.build(**{k: v for k, v in row.items() if k != "key"})


def stored() -> dict[str, tuple[int, dict[int, int]]]:
    """title -> (length, {term id: impact}) of every paper's postings."""
    titles = dict(Paper.objects.values_list("pk", "title"))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT paper_id, length FROM {postings.DOC_TABLE}")  # noqa: S608
        lengths = dict(cursor.fetchall())
        cursor.execute(f"SELECT paper_id, term_id, impact FROM {postings.POSTING_TABLE}")  # noqa: S608
        found: dict[int, dict[int, int]] = {}
        for paper_id, term, impact in cursor.fetchall():
            found.setdefault(paper_id, {})[term] = impact
    assert set(lengths) == set(titles) == set(found)
    return {titles[pk]: (lengths[pk], found[pk]) for pk in titles}


def reference() -> dict[str, tuple[int, dict[int, float]]]:
    """title -> (length, {term id: weighted frequency}) from the library's texts by the
    plain analyzer, one stem at a time."""
    with connection.cursor() as cursor:
        texts = postings._texts(cursor, list(Paper.objects.values_list("pk", flat=True)))
    titles = dict(Paper.objects.values_list("pk", "title"))
    result = {}
    for paper_id, *fields in texts:
        weighted: dict[int, float] = {}
        length = 0
        for text, weight in zip(fields, postings.FIELD_WEIGHTS, strict=True):
            counts = analysis.term_counts(text or "")
            length += sum(counts.values())
            for term, count in counts.items():
                key = analysis.term_id(term)
                weighted[key] = weighted.get(key, 0.0) + weight * count
        result[titles[paper_id]] = (length, weighted)
    return result


def expected_impacts(
    counted: dict[str, tuple[int, dict[int, float]]], averages: dict[str, float]
) -> dict[str, tuple[int, dict[int, int]]]:
    return {
        title: (
            length,
            {t: postings.impact(w, length, averages[title]) for t, w in weighted.items()},
        )
        for title, (length, weighted) in counted.items()
    }


def test_a_bulk_import_and_one_paper_at_a_time_write_the_same_postings() -> None:
    # The bulk path: one batch of records, as the import commands send them.
    postings.forget_stats()
    items = [RawItem(location=f"line {n}", data=row) for n, row in enumerate(rows(), 1)]
    report = import_records(items, build=build)
    assert report.created == len(rows()) and not report.failures
    bulk, counted = stored(), reference()
    # An empty library: the batch's own average length scales every impact.
    average = sum(length for length, _ in counted.values()) / len(counted)
    assert bulk == expected_impacts(counted, dict.fromkeys(counted, average))

    Paper.objects.all().delete()  # the postings go with them (a trigger)
    postings.forget_stats()
    # One at a time: each paper is scaled by the average length of those before it.
    averages: dict[str, float] = {}
    for row in rows():
        record = build(row)
        before = [counted[title][0] for title in averages]
        averages[record.title] = sum(before) / len(before) if before else counted[record.title][0]
        papers_upsert_retrying(records=[record])
    single = stored()
    assert reference() == counted  # the same texts were stored
    assert single == expected_impacts(counted, averages)
    # The same terms, frequencies and lengths; only the average they were scaled by differs.
    assert {t: (n, set(p)) for t, (n, p) in single.items()} == {
        t: (n, set(p)) for t, (n, p) in bulk.items()
    }
    assert len(bulk) == len(rows()) and all(terms for _, terms in bulk.values())


def test_the_word_cache_gives_the_terms_of_the_plain_analyzer() -> None:
    text = EXTRA["title"] + " " + EXTRA["abstract"] + " the of and 1 x 42 e2e"
    length, counts = analysis.term_id_counts(text)
    plain = analysis.term_counts(text)
    assert length == sum(plain.values())
    assert dict(counts) == {analysis.term_id(stem): n for stem, n in plain.items()}
    analysis._word_terms.clear()  # a second time, from an empty cache
    assert analysis.term_id_counts(text) == (length, counts)


def test_fold_strips_accents_as_before() -> None:
    import unicodedata

    for text in ["Ünïcödé", "naïve ﬁrst", "Ångström", "日本語 text", "e\u0301te\u0301", "Œuvre ß"]:
        lowered = text.lower()
        plain = "".join(
            c for c in unicodedata.normalize("NFKD", lowered) if not unicodedata.combining(c)
        )
        assert analysis.fold(text) == plain


def test_the_word_cache_gives_the_same_counts_when_it_is_emptied_on_the_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cache smaller than a text's words is emptied while counting: the counts are still
    the plain analyzer's."""
    monkeypatch.setattr(analysis, "_word_terms", {})
    monkeypatch.setattr(analysis, "WORD_TERMS_MAX", 3)
    for text in (EXTRA["title"], EXTRA["abstract"], EXTRA["title"]):
        length, counts = analysis.term_id_counts(text)
        plain = analysis.term_counts(text)
        assert length == sum(plain.values())
        assert counts == {analysis.term_id(term): n for term, n in plain.items()}
        assert len(analysis._word_terms) <= 3 + len(set(analysis.words(text)))

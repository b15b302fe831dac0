"""Upsert with de-duplication and merging, identifiers with clash suffixes, keywords."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from core.errors import InvalidInput, NotFound
from papers.models import Author, Keyword, Paper, PaperIdentifier
from papers.schemas import PaperRecord
from papers.selectors import paper_detail, paper_get
from papers.services import paper_keywords_update, papers_upsert

pytestmark = pytest.mark.django_db


def test_same_authors_and_year_get_clash_suffixes(make_paper: Callable[..., Paper]) -> None:
    first = make_paper("Paper one", authors=["John Smith"], year=2024)
    second = make_paper("Paper two", authors=["John Smith"], year=2024)
    third = make_paper("Paper three", authors=["John Smith"], year=2024)
    assert [first.human_id, second.human_id, third.human_id] == [
        "[Smith, J. 2024]",
        "[Smith, J. 2024-2]",
        "[Smith, J. 2024-3]",
    ]


def test_clash_suffix_is_not_reused_after_a_deletion(make_paper: Callable[..., Paper]) -> None:
    make_paper("Paper one", authors=["John Smith"], year=2024)
    make_paper("Paper two", authors=["John Smith"], year=2024).delete()
    make_paper("Paper three", authors=["John Smith"], year=2024)
    third = make_paper("Paper four", authors=["John Smith"], year=2024)
    assert third.human_id == "[Smith, J. 2024-3]"


def test_citekeys_get_letter_suffixes_on_clash(make_paper: Callable[..., Paper]) -> None:
    a = make_paper("Deep learning", authors=["Yann LeCun"], year=2015)
    b = make_paper("Deep networks", authors=["Yann LeCun"], year=2015)
    assert (a.citekey, b.citekey) == ("lecun2015deep", "lecun2015deepa")


def test_paper_ids_count_from_one_and_are_integers(make_paper: Callable[..., Paper]) -> None:
    paper = make_paper()
    assert isinstance(paper.paper_id, int)
    assert paper_get(ref=str(paper.paper_id)) == paper


def test_paper_resolves_by_id_human_id_and_citekey(make_paper: Callable[..., Paper]) -> None:
    paper = make_paper()
    assert paper_get(ref=paper.paper_id) == paper
    assert paper_get(ref=paper.human_id) == paper
    assert paper_get(ref=paper.citekey) == paper
    with pytest.raises(NotFound):
        paper_get(ref="[Nobody, N. 1900]")


def test_same_doi_in_any_form_is_one_paper(make_paper: Callable[..., Paper]) -> None:
    first = make_paper("Title A", doi="10.1000/ABC")
    second = make_paper("Title A (preprint)", doi="https://doi.org/10.1000/abc", source="arxiv")
    assert first.pk == second.pk
    assert Paper.objects.count() == 1
    merged = Paper.objects.get()
    assert merged.metadata["alternates"]["title"] == [
        {"value": "Title A (preprint)", "source": "arxiv"}
    ]
    assert merged.metadata["sources"] == ["local", "arxiv"]


def test_arxiv_id_versions_are_one_paper(make_paper: Callable[..., Paper]) -> None:
    first = make_paper("X", arxiv_id="2104.12255v1")
    second = make_paper("X", arxiv_id="arXiv:2104.12255v3", doi="10.1000/x")
    assert first.pk == second.pk
    assert Paper.objects.get().doi == "10.1000/x"  # filled in, not lost


def test_title_match_needs_a_close_year_and_the_same_first_author(
    make_paper: Callable[..., Paper],
) -> None:
    a = make_paper("Neural Machine Translation!", authors=["Kyunghyun Cho"], year=2014)
    same = make_paper("neural machine translation", authors=["Cho, Kyunghyun"], year=2014)
    # A preprint and its publication a year apart are one paper ...
    next_year = make_paper("Neural machine translation", authors=["K. Cho"], year=2015)
    # ... two years apart, or by another first author, they are not.
    two_years = make_paper("Neural machine translation", authors=["Kyunghyun Cho"], year=2016)
    other_author = make_paper("Neural machine translation", authors=["Ilya Sutskever"], year=2014)
    assert a.pk == same.pk == next_year.pk
    assert len({a.pk, two_years.pk, other_author.pk}) == 3


def test_a_year_apart_papers_with_different_source_ids_stay_apart(
    make_paper: Callable[..., Paper],
) -> None:
    first = make_paper(
        "Overview of the Shared Task",
        authors=["Ann Lee"],
        year=2020,
        identifiers={"acl": "2020.wnut-1.1"},
    )
    second = make_paper(
        "Overview of the Shared Task",
        authors=["Ann Lee"],
        year=2021,
        identifiers={"acl": "2021.wnut-1.1"},
    )
    assert first.pk != second.pk


def test_a_preprint_and_its_publication_merge_in_one_batch() -> None:
    records = [
        PaperRecord.build(title="Deep Residual Learning", authors=["Kaiming He"], year=2015,
                          arxiv_id="1512.03385"),
        PaperRecord.build(title="Deep residual learning.", authors=["K He"], year=2016,
                          doi="10.1109/CVPR.2016.90"),
    ]  # fmt: skip
    outcome = papers_upsert(records=records)
    assert outcome.created == 1 and len(set(outcome.paper_ids)) == 1
    paper = Paper.objects.get()
    assert paper.arxiv_id == "1512.03385" and paper.doi == "10.1109/cvpr.2016.90"


def test_title_match_is_refused_when_dois_contradict(make_paper: Callable[..., Paper]) -> None:
    a = make_paper("Introduction", authors=["A B"], year=2018, doi="10.1000/one")
    b = make_paper("Introduction", authors=["A B"], year=2018, doi="10.1000/two")
    assert a.pk != b.pk


def test_merge_fills_empty_fields_and_keeps_conflicts(make_paper: Callable[..., Paper]) -> None:
    make_paper("T", doi="10.1000/t", venue="ACL", pages="1--10")
    make_paper(
        "T", doi="10.1000/t", venue="EMNLP", pages="1--12", abstract="An abstract.", source="bib"
    )
    paper = Paper.objects.get()
    assert paper.abstract == "An abstract."
    assert paper.venue is not None and paper.venue.name == "ACL"
    assert paper.pages == "1--10"
    alternates = paper.metadata["alternates"]
    assert alternates["venue"] == [{"value": "EMNLP", "source": "bib"}]
    assert alternates["pages"] == [{"value": "1--12", "source": "bib"}]


def test_duplicates_inside_one_batch_are_merged() -> None:
    records = [
        PaperRecord.build(title="Same", doi="10.1000/s", authors=["A One"]),
        PaperRecord.build(title="Other", doi="10.1000/o"),
        PaperRecord.build(title="Same (v2)", doi="10.1000/S", abstract="x"),
    ]
    outcome = papers_upsert(records=records)
    assert (outcome.created, outcome.updated) == (2, 1)
    assert outcome.paper_ids[0] == outcome.paper_ids[2]
    assert Paper.objects.get(doi="10.1000/s").abstract == "x"


def test_reimporting_the_same_records_changes_nothing() -> None:
    records = [
        PaperRecord.build(title=f"Paper {i}", authors=["Léon Dostert"], year=2000 + i,
                          identifiers={"acl": f"A{i}"})
        for i in range(5)
    ]  # fmt: skip
    papers_upsert(records=records)
    again = papers_upsert(records=records)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 5)


def test_authors_are_shared_and_ordered(make_paper: Callable[..., Paper]) -> None:
    make_paper("One", authors=["Ada Lovelace", "Charles Babbage"])
    make_paper("Two", authors=["Charles Babbage", "Ada Lovelace"])
    assert Author.objects.count() == 2
    detail = paper_detail(ref=Paper.objects.get(title="Two").pk)
    assert detail["authors"] == ["Charles Babbage", "Ada Lovelace"]


def test_citekey_alias_resolves_but_does_not_merge_papers() -> None:
    a = papers_upsert(records=[PaperRecord.build(title="A", identifiers={"citekey": "smith2020"})])
    b = papers_upsert(records=[PaperRecord.build(title="B", identifiers={"citekey": "smith2020"})])
    assert a.paper_ids != b.paper_ids
    assert PaperIdentifier.objects.filter(value="smith2020").count() == 1
    assert paper_get(ref="smith2020").pk == a.paper_ids[0]


@pytest.mark.parametrize(
    ("keyword", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * 101, "limit is 100"),
        ("bad\x00word", "control"),
        ("tab\tinside", "control"),
        (42, "string"),
    ],
)
def test_invalid_keywords_are_refused(
    make_paper: Callable[..., Paper], keyword: object, message: str
) -> None:
    paper = make_paper()
    with pytest.raises(InvalidInput, match=message):
        paper_keywords_update(refs=[paper.pk], action="add", keywords=[keyword])  # type: ignore[list-item]
    assert Keyword.objects.count() == 0


def test_keywords_add_remove_set_on_many_papers(make_paper: Callable[..., Paper]) -> None:
    a = make_paper("A")
    b = make_paper("B", authors=["Someone Else"])
    result = paper_keywords_update(refs=[a.pk, b.citekey], action="add", keywords=[" NLP ", "MT"])
    assert result == {a.pk: ["MT", "NLP"], b.pk: ["MT", "NLP"]}
    result = paper_keywords_update(refs=[a.pk], action="remove", keywords=["nlp"])
    assert result == {a.pk: ["MT"]}
    result = paper_keywords_update(refs=[a.pk, b.pk], action="set", keywords=["survey"])
    assert result == {a.pk: ["survey"], b.pk: ["survey"]}
    assert Keyword.objects.filter(name_key="nlp").count() == 1  # one row, any spelling


def test_keyword_update_is_all_or_nothing(make_paper: Callable[..., Paper]) -> None:
    a = make_paper("A")
    with pytest.raises(NotFound):
        paper_keywords_update(refs=[a.pk, 99999], action="add", keywords=["x"])
    assert not a.keywords.exists()
    with pytest.raises(InvalidInput, match="Unknown action"):
        paper_keywords_update(refs=[a.pk], action="replace", keywords=["x"])


def test_record_without_title_is_refused() -> None:
    with pytest.raises(InvalidInput, match="title"):
        PaperRecord.build(title="  ")


def test_absurd_year_is_refused() -> None:
    with pytest.raises(InvalidInput, match="year"):
        PaperRecord.build(title="T", year="19999")


@pytest.mark.parametrize(("raw", "year"), [(2024, 2024), ("2024", 2024), ("2024-05-01", 2024),
                                           ("2019/7", 2019), (None, None), ("", None)])  # fmt: skip
def test_years_are_read_from_dates(raw: object, year: int | None) -> None:
    assert PaperRecord.build(title="T", year=raw).year == year


def test_values_longer_than_their_column_are_cut_and_kept_whole() -> None:
    pages = "1-2, 4-5, 7-8, 10-11, 13-14, 16-17, 19-20, 22-23, 25-26, 28-29, 31-32, 34-35"
    record = PaperRecord.build(title="Long pages", pages=pages, entry_type="x" * 40)
    papers_upsert(records=[record])
    paper = Paper.objects.get()
    assert paper.pages == pages[:64]
    assert paper.metadata["overflow"]["pages"] == pages
    assert len(paper.entry_type) == 32


def test_a_generic_type_never_undoes_or_shadows_a_specific_one() -> None:
    """The same paper listed as 'article' by one source and 'inproceedings' by another:
    importing both twice, in either order, settles after the first run."""
    first = PaperRecord.build(title="Same", doi="10.1000/same", entry_type="article")
    second = PaperRecord.build(title="Same", doi="10.1000/same", entry_type="inproceedings")
    papers_upsert(records=[first])
    papers_upsert(records=[second])
    assert Paper.objects.get().entry_type == "inproceedings"
    again = papers_upsert(records=[first])
    assert (again.updated, again.unchanged) == (0, 1)
    assert "entry_type" not in Paper.objects.get().metadata.get("alternates", {})


def test_a_suffixed_citekey_never_takes_another_papers_key(
    make_paper: Callable[..., Paper],
) -> None:
    """'anonrole' + suffix 's' is the plain key of a paper titled 'Roles ...'."""
    roles = make_paper("Roles of things", authors=[], year=None)
    assert roles.citekey == "anonroles"
    records = [PaperRecord.build(title=f"Role number {i}") for i in range(20)]
    papers_upsert(records=records)
    keys = list(Paper.objects.values_list("citekey", flat=True))
    assert len(keys) == len(set(keys)) == 21


def test_a_batch_of_ten_thousand_keys_checks_its_aliases_within_the_databases_limits() -> None:
    # 10k citekey bases make 270k candidate keys: one IN (...) of them is past SQLite's
    # 250,000 and PostgreSQL's 65,535 parameters (bench_evidence's 10k-record upsert hit it).
    from papers.services import _citekey_aliases

    paper = papers_upsert(records=[PaperRecord.build(title="Aliased", authors=["A. Zed"])])
    PaperIdentifier.objects.create(paper_id=paper.paper_ids[0], scheme="citekey", value="base9999c")
    bases = {f"base{number}" for number in range(10_000)}
    assert _citekey_aliases(bases) == {"base9999c"}


def test_citekey_aliases_are_found_when_they_outnumber_the_candidate_keys() -> None:
    # More aliases than candidates: only the candidates are found.
    from papers.services import _citekey_aliases

    paper = papers_upsert(records=[PaperRecord.build(title="Aliased", authors=["A. Zed"])])
    PaperIdentifier.objects.bulk_create(
        PaperIdentifier(paper_id=paper.paper_ids[0], scheme="citekey", value=f"other{number}")
        for number in range(40)
    )
    PaperIdentifier.objects.create(paper_id=paper.paper_ids[0], scheme="citekey", value="smithb")
    assert _citekey_aliases({"smith"}) == {"smithb"}


# --- PubMed, PMC and OpenReview ids; preprint <-> published version (papers/matching.py) ---

TRIAL = {"authors": ["Jane Doe", "John Roe"]}
PREPRINT_DOI = "10.1101/2020.03.01.20029801"
JOURNAL_DOI = "10.1056/nejmoa2001282"


@pytest.mark.parametrize(
    "identifiers",
    [{"pmid": "PMID: 32187464"}, {"pmcid": "pmc7121626"}, {"openreview": "YicbFdNTTy"}],
)
def test_the_same_pubmed_pmc_or_openreview_id_is_the_same_paper(
    make_paper: Callable[..., Paper], identifiers: dict[str, str]
) -> None:
    first = make_paper("A trial of a drug", year=2020, **TRIAL, identifiers=identifiers)
    second = make_paper("Another title entirely", year=2021, identifiers=identifiers)
    assert first.pk == second.pk


@pytest.mark.parametrize("scheme", ["pmid", "pmcid", "openreview"])
def test_different_ids_of_one_scheme_are_different_papers(
    make_paper: Callable[..., Paper], scheme: str
) -> None:
    values = {
        "pmid": ("111", "222"),
        "pmcid": ("PMC1", "PMC2"),
        "openreview": ("aaaaaaaa", "bbbbbbbb"),
    }
    one, two = (
        make_paper("Editorial", year=2020, **TRIAL, identifiers={scheme: value})
        for value in values[scheme]
    )
    assert one.pk != two.pk


def preprint(**values: object) -> PaperRecord:
    return PaperRecord.build(
        title="A trial of a drug in patients (preprint)", year=2020, **TRIAL, source="medrxiv",
        doi=PREPRINT_DOI, identifiers={"published_doi": JOURNAL_DOI, **values},
    )  # fmt: skip


def published(**values: object) -> PaperRecord:
    return PaperRecord.build(
        title="A Trial of a Drug in Hospitalized Patients", year=2021, **TRIAL, source="pubmed",
        doi=JOURNAL_DOI, identifiers={"pmid": "32187464", **values},
    )  # fmt: skip


@pytest.mark.parametrize(
    "order", ["preprint first", "published first", "one batch", "reversed batch"]
)
def test_a_preprint_naming_its_published_doi_and_the_published_record_are_one_paper(
    order: str,
) -> None:
    # The preprint has a PMID of its own (PubMed indexes some preprints): the explicit link wins.
    records = [preprint(pmid="32511500"), published()]
    if order == "published first" or order == "reversed batch":
        records.reverse()
    if order.endswith("batch"):
        outcome = papers_upsert(records=records)
    else:
        outcome = papers_upsert(records=records[:1])
        outcome.paper_ids += papers_upsert(records=records[1:]).paper_ids
    assert len(set(outcome.paper_ids)) == 1 and Paper.objects.count() == 1
    paper = Paper.objects.get()
    assert {paper.doi, *(a["value"] for a in paper.metadata["alternates"]["doi"])} == {
        PREPRINT_DOI,
        JOURNAL_DOI,
    }
    assert paper_get(ref=JOURNAL_DOI) == paper == paper_get(ref="pmid:32187464")


def test_a_published_doi_matches_a_doi_alias_and_never_a_stranger(
    make_paper: Callable[..., Paper],
) -> None:
    journal = make_paper("Journal version", doi="10.1000/other", identifiers={"doi": JOURNAL_DOI})
    assert papers_upsert(records=[preprint()]).paper_ids == [journal.pk]
    stranger = papers_upsert(
        records=[
            PaperRecord.build(title="Unrelated", identifiers={"published_doi": "10.1000/none"})
        ]
    )
    assert stranger.created == 1

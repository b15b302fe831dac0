"""Version-aware de-duplication inside a review (issue 23, projects/review/dedup.py): which
library papers are grouped as versions of one work and which are not, on a real database;
then a review through the tools in-process: one candidate per work with its versions, the
PRISMA counts, splitting a grouped record back out (and what refuses to), and screening
that never sees the grouped records.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from papers.models import Citation, Paper
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.models import ReviewCandidate, ReviewDuplicate
from projects.review.dedup import titles_match, work_groups, works_load
from projects.review.prisma import prisma_problems
from tests.projects.review.builders import assert_counts_add_up
from tests.projects.review.screening_builders import ToolError, Tools

pytestmark = pytest.mark.django_db(transaction=True)

BERT_AUTHORS = ["Jacob Devlin", "Ming-Wei Chang", "Kenton Lee", "Kristina Toutanova"]
# Each value: the record; keys name them in the tests. Every abstract says "transformers",
# so one query finds them all.
RECORDS: dict[str, dict[str, Any]] = {
    # A preprint (arXiv DOI) and its publication (another DOI), a year apart: the library
    # keeps them apart (two DOIs), the review groups them.
    "bert_preprint": dict(
        title="BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
        authors=BERT_AUTHORS, year=2018, arxiv_id="1810.04805",
        doi="10.48550/arXiv.1810.04805", venue="arXiv",
    ),
    "bert_published": dict(
        title="BERT: Pre-Training of Deep Bidirectional Transformers for Language "
        "Understanding.",
        authors=BERT_AUTHORS, year=2019, doi="10.18653/v1/N19-1423", venue="NAACL-HLT",
    ),
    # "v2", a subtitle added, an accent lost and two years between preprint and journal.
    "gnn_preprint": dict(
        title="Graph transformers for molecular property prediction v2",
        authors=["Ana Müller", "Li Wei"], year=2020, arxiv_id="2003.01234",
    ),
    "gnn_published": dict(
        title="Graph Transformers for Molecular Property Prediction: A Benchmark",
        authors=["Ana Muller", "Li Wei"], year=2022, doi="10.1021/acs.jcim.2c00001",
    ),
    # Spelling variants (colour/color, modelling/modeling) and accents.
    "cafe_preprint": dict(
        title="Modelling café queues with colour-coded transformers",
        authors=["Zoë Ortega", "Tim Baker"], year=2021, arxiv_id="2105.00077",
    ),
    "cafe_published": dict(
        title="Modeling cafe queues with color coded transformers",
        authors=["Zoe Ortega", "Tim Baker"], year=2021, doi="10.1016/j.ejor.2021.55",
    ),
    # Only an identifier says these are one work: the arXiv DOI names the arXiv id.
    "switch_datacite": dict(
        title="Sparse mixtures of experts at trillion scale",
        authors=["William Fedus"], year=2021, doi="10.48550/arXiv.2101.03961",
    ),
    "switch_journal": dict(
        title="Switch Transformers: Scaling to Trillion Parameter Models",
        authors=["William Fedus", "Barret Zoph"], year=2022, arxiv_id="2101.03961",
        doi="10.5555/jmlr.2022.120",
    ),
    # Near misses: never grouped.
    "part_1": dict(
        title="Learning to rank with transformers, Part 1",
        authors=["Ada Lovelace", "Bob Smith"], year=2020,
    ),
    "part_2": dict(
        title="Learning to rank with transformers, Part 2",
        authors=["Ada Lovelace", "Bob Smith"], year=2020,
    ),
    "attention_vaswani": dict(
        title="Attention is all you need for transformers",
        authors=["Ashish Vaswani", "Noam Shazeer"], year=2017,
    ),
    "attention_other": dict(
        title="Attention Is All You Need for Transformers",
        authors=["Jane Doe", "Noam Shazeer"], year=2017,
    ),
    "survey_image": dict(
        title="A survey of transformers for image segmentation",
        authors=["Chen Li", "Wang Fang"], year=2023,
    ),
    "survey_video": dict(
        title="A survey of transformers for video segmentation",
        authors=["Chen Li", "Wang Fang"], year=2023,
    ),
    "old_edition": dict(
        title="Transformers in power grids", authors=["Olaf Berg"], year=2010,
    ),
    "new_edition": dict(
        title="Transformers in power grids", authors=["Olaf Berg"], year=2015,
    ),
}  # fmt: skip
GROUPED = [
    ("bert_published", "bert_preprint"),
    ("gnn_published", "gnn_preprint"),
    ("cafe_published", "cafe_preprint"),
    ("switch_journal", "switch_datacite"),
]
APART = [
    ("part_1", "part_2"),
    ("attention_vaswani", "attention_other"),
    ("survey_image", "survey_video"),
    ("old_edition", "new_edition"),
]


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


@pytest.fixture
def library(transactional_db: None) -> dict[str, int]:
    """Each record upserted on its own, as separate searches would save them."""
    ids = {}
    for name, values in RECORDS.items():
        abstract = f"{values['title']}: what transformers do here."
        record = PaperRecord.build(abstract=abstract, **values)
        ids[name] = papers_upsert(records=[record]).paper_ids[0]
    assert len(set(ids.values())) == len(RECORDS), "the library merged some: no test here"
    return ids


def group_of(grouping: Any, paper_id: int) -> list[int]:
    return next(group for group in grouping.groups if paper_id in group)


def test_versions_of_one_work_are_grouped_with_the_published_one_first(
    library: dict[str, int],
) -> None:
    order = list(library.values())
    grouping = work_groups(order, works_load(order))
    for published, preprint in GROUPED:
        group = group_of(grouping, library[published])
        assert group == [library[published], library[preprint]], (published, group)
    assert "same arxiv 2101.03961" in grouping.why[library["switch_datacite"]]
    assert grouping.why[library["gnn_preprint"]].startswith("subtitle, first author muller")
    assert "2020/2022" in grouping.why[library["gnn_preprint"]]
    assert grouping.why[library["cafe_preprint"]].startswith("title variant")
    assert len(grouping.groups) == len(RECORDS) - len(GROUPED)


def test_different_works_with_similar_titles_are_never_grouped(library: dict[str, int]) -> None:
    order = list(library.values())
    grouping = work_groups(order, works_load(order))
    for one, other in APART:
        assert group_of(grouping, library[one]) == [library[one]], (one, other)
        assert group_of(grouping, library[other]) == [library[other]], (one, other)


def test_a_group_never_holds_two_arxiv_ids(transactional_db: None) -> None:
    """Two preprints of the same title and authors (two arXiv ids) and a publication that
    matches both (two years later: the library keeps it apart): it joins the first; the
    second stays apart."""
    common = dict(title="Scaling laws for transformers", authors=["Ann Lee", "Bo Kim"])
    records = [
        dict(common, year=2020, arxiv_id="2001.00001"),
        dict(common, year=2020, arxiv_id="2001.00002"),
        dict(common, year=2022, doi="10.1000/scaling.2022"),
    ]
    ids = [papers_upsert(records=[PaperRecord.build(**r)]).paper_ids[0] for r in records]
    assert len(set(ids)) == 3
    grouping = work_groups(ids, works_load(ids))
    assert sorted(map(sorted, grouping.groups)) == sorted([sorted([ids[0], ids[2]]), [ids[1]]])


def test_a_doi_the_library_kept_as_an_alternate_links_the_journal_version(
    transactional_db: None,
) -> None:
    """An arXiv preprint (arXiv DOI) merged with a record of the same arXiv id naming the
    journal DOI keeps that DOI as an alternate; the journal's own record (that DOI, a new
    title, three years later) is another library paper, grouped with it by the DOI."""
    authors = ["Rita Gomes", "Sam Ode"]
    preprint = dict(
        title="Cheap attention", authors=authors, year=2019, arxiv_id="1905.00011",
        doi="10.48550/arXiv.1905.00011",
    )  # fmt: skip
    upsert = papers_upsert
    first = upsert(records=[PaperRecord.build(**preprint)]).paper_ids[0]
    merged = dict(preprint, doi="10.1145/cheap.2022", source="s2")
    assert upsert(records=[PaperRecord.build(**merged)]).paper_ids == [first]
    alternates = Paper.objects.get(pk=first).metadata["alternates"]["doi"]
    assert [entry["value"] for entry in alternates] == ["10.1145/cheap.2022"]
    journal = dict(
        title="Attention on a budget", authors=authors, year=2022, doi="10.1145/cheap.2022"
    )
    second = upsert(records=[PaperRecord.build(**journal)]).paper_ids[0]
    assert second != first
    grouping = work_groups([first, second], works_load([first, second]))
    assert grouping.groups == [[second, first]]
    assert grouping.why[first] == "same doi 10.1145/cheap.2022"


@pytest.mark.parametrize("scheme", ["openalex", "s2"])
def test_records_naming_one_openalex_or_s2_id_are_one_work_whatever_their_dois(
    transactional_db: None, scheme: str
) -> None:
    """OpenAlex and Semantic Scholar give a preprint and its publication one work id. A
    record of the publication (journal DOI, another title, two years on) naming the
    preprint's id joins the preprint's paper (an identifier belongs to one paper), its DOI
    kept as an alternate; a later record of the publication alone (that DOI, no id) is
    grouped with it in the review by that DOI."""
    work_id = {"openalex": "W2963403868", "s2": "204e3073870fae3d05bcbc2f6a8e263d9b72e776"}
    authors = ["Ada Lovelace", "Bob Smith"]
    preprint = dict(
        title="Cheap transformers", authors=authors, year=2020, arxiv_id="2001.01234",
        doi="10.48550/arXiv.2001.01234", identifiers={scheme: work_id[scheme]},
    )  # fmt: skip
    published = dict(
        title="Transformers on a shoestring", authors=authors, year=2022,
        doi="10.5555/shoestring", identifiers={scheme: work_id[scheme]},
    )  # fmt: skip
    first = papers_upsert(records=[PaperRecord.build(**preprint)]).paper_ids[0]
    assert papers_upsert(records=[PaperRecord.build(**published)]).paper_ids == [first]
    journal = {key: value for key, value in published.items() if key != "identifiers"}
    second = papers_upsert(records=[PaperRecord.build(**journal)]).paper_ids[0]
    assert second != first  # the library keeps the journal's own record apart
    grouping = work_groups([first, second], works_load([first, second]))
    assert sorted(map(sorted, grouping.groups)) == [sorted([first, second])]
    assert grouping.groups[0][0] == second  # the published version is screened
    assert grouping.why[first] == "same doi 10.5555/shoestring"


def test_a_medrxiv_preprint_naming_its_published_doi_is_one_work_with_the_publication(
    transactional_db: None,
) -> None:
    """A medRxiv preprint and its journal version (another title, a year on, their own
    PMIDs) saved before any record linked them are two library papers; a later record of
    the preprint naming the published version's DOI (`published_doi`, as bioRxiv/medRxiv
    and Europe PMC give it) joins the preprint's paper by its own DOI, and the review then
    counts the two as one work, the publication screened."""
    authors = ["Jane Doe", "John Roe"]
    preprint = dict(
        title="Remdesivir in mild COVID-19: a preprint", authors=authors, year=2020,
        doi="10.1101/2020.05.01.20087593", identifiers={"pmid": "32511500"},
    )  # fmt: skip
    journal = dict(
        title="Remdesivir for the Treatment of Covid-19", authors=authors, year=2021,
        doi="10.1056/NEJMoa2007764", identifiers={"pmid": "32445440"},
    )  # fmt: skip
    first = papers_upsert(records=[PaperRecord.build(**preprint)]).paper_ids[0]
    second = papers_upsert(records=[PaperRecord.build(**journal)]).paper_ids[0]
    assert first != second
    linked = dict(preprint, identifiers={"published_doi": "10.1056/NEJMoa2007764"})
    assert papers_upsert(records=[PaperRecord.build(**linked)]).paper_ids == [first]
    grouping = work_groups([first, second], works_load([first, second]))
    assert grouping.groups == [[second, first]]
    assert grouping.why[first] == "same doi 10.1056/nejmoa2007764"


def test_a_version_of_a_paper_the_review_has_is_attached_to_its_candidate(
    library: dict[str, int],
) -> None:
    """The citation search: a new paper that is a version of a known one (a candidate, or a
    version grouped with one) is attached to that candidate, not a candidate itself."""
    known = {library["bert_published"]: library["bert_published"]}
    new = [library["bert_preprint"], library["part_1"]]
    grouping = work_groups(new, works_load([*new, *known]), known=known)
    assert grouping.attached == {library["bert_preprint"]: library["bert_published"]}
    assert grouping.groups == [[library["part_1"]]]


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("Deep Learning for Cats", "deep learning for cats.", True),
        ("Deep learning for cats v3", "Deep Learning for Cats", True),
        ("Deep learning for cats (preprint)", "Deep learning for cats", True),
        ("Réseaux de neurones profonds", "Reseaux de neurones profonds", True),
        ("Deep learning for cats: a survey", "Deep learning for cats", True),
        ("Deep learning for cats, part I", "Deep learning for cats, part II", False),
        ("Deep learning for cats 2", "Deep learning for cats 3", False),
        ("Deep learning for cats", "Deep learning for dogs", False),
        ("Cats: a survey", "Cats", False),  # a main title of one word stands for nothing
    ],
)
def test_title_variants(one: str, other: str, same: bool) -> None:
    assert (titles_match(one, other) is not None) is same


WORDS = st.text(st.characters(min_codepoint=97, max_codepoint=122), min_size=3, max_size=9)


@given(
    words=st.lists(WORDS, min_size=4, max_size=10),
    upper=st.booleans(),
    mark=st.sampled_from(["", " v2", " (preprint)", ".", "!"]),
    number=st.integers(1, 9),
)
@hypothesis_settings(deadline=None, database=None)
def test_title_variants_match_and_numbered_parts_do_not(
    words: list[str], upper: bool, mark: str, number: int
) -> None:
    title = " ".join(words)
    variant = (title.upper() if upper else title.title()).replace(" ", " - ", 1) + mark
    assert titles_match(title, variant) is not None
    assert titles_match(f"{title} part {number}", f"{title} part {number + 1}") is None


# --- inside a review --------------------------------------------------------------------------


@pytest.fixture
def at_screen(library: dict[str, int]) -> tuple[Tools, str, dict[str, Any]]:
    tools = Tools()
    state = tools("start_review", query="What do transformers do?", limit=50)
    data = {"queries": ["transformers"], "engines": ["local"]}
    state = tools("decide", session_id=state["session_id"], action="edit", data=data, checkpoint=1)
    assert state["current_checkpoint_kind"] == "screen", state
    return tools, state["session_id"], state


def candidates(tools: Tools, session_id: str) -> dict[int, dict[str, Any]]:
    state = tools("get_session", session_id=session_id, limit=50)
    return {item["paper_id"]: item for item in state["checkpoint"]["candidates"]["items"]}


def test_a_review_screens_each_work_once_and_keeps_its_versions(
    at_screen: tuple[Tools, str, dict[str, Any]], library: dict[str, int]
) -> None:
    tools, session_id, state = at_screen
    counts, prisma = state["counts"], state["prisma"]
    assert counts["identified_total"] == len(RECORDS)
    assert counts["screened"] == len(RECORDS) - len(GROUPED)
    assert counts["duplicates_removed"] == len(GROUPED)
    assert_counts_add_up(counts)
    assert prisma_problems(prisma) == []
    assert prisma["databases"]["versions_grouped"] == len(GROUPED)
    assert prisma["diagram"] == f"review://{session_id}/prisma.svg"
    shown = candidates(tools, session_id)
    for published, preprint in GROUPED:
        assert library[preprint] not in shown
        versions = shown[library[published]]["versions"]
        assert [v["paper_id"] for v in versions] == [library[preprint]]
        assert versions[0]["engines"] == ["local"] and versions[0]["match"]
    for one, other in APART:
        assert library[one] in shown and library[other] in shown
        assert "versions" not in shown[library[one]]
    # Screening never sees the grouped records.
    batch = tools("screen_next", session_id=session_id, limit=50)
    screened = {record["paper_id"] for record in batch["records"]}
    assert screened == set(shown)
    assert batch["total"] == len(RECORDS) - len(GROUPED)


def test_splitting_a_wrong_group_makes_the_record_a_candidate_again(
    at_screen: tuple[Tools, str, dict[str, Any]], library: dict[str, int]
) -> None:
    tools, session_id, _ = at_screen
    preprint = library["gnn_preprint"]
    answer = tools("split_duplicate", session_id=session_id, paper=str(preprint))
    assert answer["paper_id"] == preprint
    assert answer["was_grouped_with"] == library["gnn_published"]
    assert answer["status"] == "pending"
    state = tools("get_session", session_id=session_id, limit=50)
    counts = state["counts"]
    assert counts["duplicates_removed"] == len(GROUPED) - 1
    assert counts["screened"] == len(RECORDS) - len(GROUPED) + 1
    assert_counts_add_up(counts)
    assert prisma_problems(state["prisma"]) == []
    shown = candidates(tools, session_id)
    assert shown[preprint]["status"] == "pending"
    assert "versions" not in shown[library["gnn_published"]]
    # The merge and its undo stay on record.
    row = ReviewDuplicate.objects.get(session_id=session_id, paper_id=preprint)
    assert row.split_by == "agent" and row.split_at is not None
    assert row.match.startswith("subtitle")
    # By citekey too; a record not grouped (any more) is refused, naming it.
    citekey = Paper.objects.get(pk=library["bert_preprint"]).citekey
    assert (
        tools("split_duplicate", session_id=session_id, paper=citekey)["paper_id"]
        == (library["bert_preprint"])
    )
    for paper in (str(preprint), str(library["part_1"]), "no-such-paper"):
        with pytest.raises(ToolError) as refused:
            tools("split_duplicate", session_id=session_id, paper=paper)
        assert refused.value.code == "invalid_decision"
        assert refused.value.body["papers"] == [paper]
    assert ReviewCandidate.objects.filter(session_id=session_id).count() == (
        len(RECORDS) - len(GROUPED) + 2
    )
    with pytest.raises(ToolError) as unknown:
        tools("split_duplicate", session_id="9c1b2f0e-0000-4000-8000-000000000000", paper="1")
    assert unknown.value.code == "not_found"


def test_prisma_after_completion_counts_reports_of_included_studies(
    at_screen: tuple[Tools, str, dict[str, Any]], library: dict[str, int]
) -> None:
    tools, session_id, _ = at_screen
    keep = [library["bert_published"], library["part_1"]]
    state = tools(
        "decide", session_id=session_id, action="edit", data={"include": keep}, checkpoint=2
    )
    assert state["is_complete"], state
    prisma = state["prisma"]
    assert prisma_problems(prisma) == []
    assert prisma["included"] == 2
    assert prisma["reports"] == 3  # BERT's preprint is a second report of its study
    databases = prisma["databases"]
    assert databases["sought"] == 2 and databases["not_retrieved"] == 2  # no PDFs
    assert databases["excluded"] == len(RECORDS) - len(GROUPED) - 2
    assert databases["excluded_reasons"] == {"not selected at screening": databases["excluded"]}
    with pytest.raises(ToolError) as done:
        tools("split_duplicate", session_id=session_id, paper=str(library["bert_preprint"]))
    assert done.value.code == "session_complete"


def test_a_person_splits_a_wrong_group_in_the_admin(
    at_screen: tuple[Tools, str, dict[str, Any]], library: dict[str, int], admin_client: Client
) -> None:
    tools, session_id, _ = at_screen
    url = reverse("admin:projects_reviewduplicate_changelist")
    listing = admin_client.get(url)
    assert listing.status_code == 200
    assert "Graph transformers for molecular property prediction v2" in listing.content.decode()
    row = ReviewDuplicate.objects.get(session_id=session_id, paper_id=library["cafe_preprint"])
    answer = admin_client.post(url, {"action": "split_out", "_selected_action": [row.pk]})
    assert answer.status_code == 302
    row.refresh_from_db()
    assert row.split_by == "admin:admin" and row.split_at is not None
    shown = candidates(tools, session_id)
    assert shown[library["cafe_preprint"]]["status"] == "pending"
    # Again: already split, nothing happens; after the checkpoint closed: refused, said so.
    assert (
        admin_client.post(url, {"action": "split_out", "_selected_action": [row.pk]}).status_code
        == 302
    )
    tools("decide", session_id=session_id, action="approve", checkpoint=2)
    other = ReviewDuplicate.objects.get(session_id=session_id, paper_id=library["gnn_preprint"])
    page = admin_client.post(
        url, {"action": "split_out", "_selected_action": [other.pk]}, follow=True
    )
    assert "is complete" in page.content.decode()
    other.refresh_from_db()
    assert other.split_at is None


def test_the_citation_search_groups_versions_and_attaches_those_of_known_papers(
    library: dict[str, int],
) -> None:
    tools = Tools()
    state = tools("start_review", query="What do transformers do?", limit=50)
    session_id = state["session_id"]
    data = {"queries": ["transformers"], "engines": ["local"], "snowball": True}
    tools("decide", session_id=session_id, action="edit", data=data, checkpoint=1)
    # Papers citing the one to include, saved after the search: a version of a search
    # candidate, a preprint and its publication, a candidate and a grouped version.
    new = {
        "attention_copy": dict(
            title="Attention is all you need for transformers (preprint)",
            authors=["Ashish Vaswani", "Noam Shazeer"], year=2016, arxiv_id="1706.03762",
        ),
        "ranking_preprint": dict(
            title="Ranking long lists with language models", authors=["Xu Yan"], year=2021,
            arxiv_id="2101.99999",
        ),
        "ranking_published": dict(
            title="Ranking long lists with language models: a study", authors=["Xu Yan"],
            year=2022, doi="10.1000/ranking.2022",
        ),
    }  # fmt: skip
    ids = {
        name: papers_upsert(records=[PaperRecord.build(**values)]).paper_ids[0]
        for name, values in new.items()
    }
    cited = library["part_1"]
    citing = [*ids.values(), library["attention_vaswani"], library["bert_preprint"]]
    Citation.objects.bulk_create([Citation(citing_id=pk, cited_id=cited) for pk in citing])
    state = tools(
        "decide", session_id=session_id, action="edit", data={"include": [cited]}, checkpoint=2
    )
    assert state["current_checkpoint_kind"] == "expand", state
    items = state["checkpoint"]["candidates"]["items"]
    assert [item["paper_id"] for item in items] == [ids["ranking_published"]]
    assert [v["paper_id"] for v in items[0]["versions"]] == [ids["ranking_preprint"]]
    attached = ReviewDuplicate.objects.get(session_id=session_id, paper_id=ids["attention_copy"])
    assert attached.candidate.paper_id == library["attention_vaswani"]
    assert attached.source == "citation" and attached.cites == [cited]
    block = state["counts"]["citation_search"]
    assert (block["identified_total"], block["duplicates_removed"], block["screened"]) == (5, 4, 1)
    assert_counts_add_up(state["counts"])
    prisma = state["prisma"]
    assert prisma_problems(prisma) == []
    assert prisma["other_methods"]["versions_grouped"] == 2
    # Split the attached copy: a citation candidate of its own, at the expand checkpoint.
    tools("split_duplicate", session_id=session_id, paper=str(ids["attention_copy"]))
    state = tools("get_session", session_id=session_id, limit=50)
    block = state["counts"]["citation_search"]
    assert (block["duplicates_removed"], block["screened"], block["pending"]) == (3, 2, 2)
    assert prisma_problems(state["prisma"]) == []
    split = ReviewCandidate.objects.get(session_id=session_id, paper_id=ids["attention_copy"])
    assert split.source == "citation" and split.cites == [cited]
    # A search version cannot be split at expand: its screening is over.
    with pytest.raises(ToolError) as late:
        tools("split_duplicate", session_id=session_id, paper=str(library["bert_preprint"]))
    assert late.value.code == "no_pending_checkpoint"

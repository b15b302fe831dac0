"""add_paper: identifiers recognised, metadata fetched from every engine that knows the paper
(recorded real answers replayed locally), merged into one paper, never duplicated."""

# ruff: noqa: F811  (the imported fixtures are parameters of the tests below)
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import EngineUnavailable, InvalidInput, NotFound
from engines import services as engine_services
from engines.registry import registry
from engines.services import identifier_parse
from papers.models import Paper
from papers.selectors import paper_get
from projects.intake import paper_add_by_identifier, paper_add_from_metadata
from tests.engines.builders import FIXTURES, PLOS_DOI, crossref_work, sources  # noqa: F401
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply


def arxiv_recorded(name: str) -> Reply:
    data = json.loads((FIXTURES / "arxiv" / name).read_text())
    return Reply(
        data["status_code"],
        data["body"].encode("latin-1"),
        {"Content-Type": "application/atom+xml"},
    )


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("10.1371/journal.pone.0033693", "doi", PLOS_DOI),
        ("https://doi.org/10.1371/journal.pone.0033693", "doi", PLOS_DOI),
        ("arXiv:1605.08386v1", "arxiv", "1605.08386"),
        ("https://arxiv.org/pdf/1605.08386", "arxiv", "1605.08386"),
        ("https://openalex.org/W2741809807", "openalex", "W2741809807"),
        ("https://www.biorxiv.org/content/10.1101/456574v1", "doi", "10.1101/456574"),
        (
            "https://www.medrxiv.org/content/10.1101/2025.06.13.25329599v2.full.pdf",
            "doi",
            "10.1101/2025.06.13.25329599",
        ),
        ("2020.acl-main.1", "acl", "2020.acl-main.1"),
        ("https://aclanthology.org/2020.acl-main.1/", "acl", "2020.acl-main.1"),
        ("https://aclanthology.org/2022.lrec-1.123.pdf", "acl", "2022.lrec-1.123"),
        ("P18-1001", "acl", "P18-1001"),
        ("https://www.aclanthology.org/p18-1001.pdf", "acl", "P18-1001"),
        ("acl:W19-5301", "acl", "W19-5301"),
        (
            "https://www.semanticscholar.org/paper/Attention-is-All-you-Need/"
            "204e3073870fae3d05bcbc2f6a8e263d9b72e776",
            "s2",
            "204e3073870fae3d05bcbc2f6a8e263d9b72e776",
        ),
    ],
)
def test_identifiers_in_every_common_form_are_recognised(text: str, kind: str, value: str) -> None:
    parsed = identifier_parse(text)
    assert (parsed.kind, parsed.value) == (kind, value)


@pytest.mark.parametrize("text", ["attention is all you need", "https://example.org/x"])
def test_unrecognised_identifiers_say_what_is_accepted(text: str) -> None:
    with pytest.raises(InvalidInput, match="give a DOI"):
        identifier_parse(text)
    with pytest.raises(InvalidInput, match="empty"):
        identifier_parse("  ")


@pytest.mark.django_db(transaction=True)
def test_a_doi_is_added_with_crossref_metadata_and_never_twice(sources: ReplayServer) -> None:
    sources.add(f"/crossref/works/{PLOS_DOI.replace('/', '%2F')}", crossref_work())
    added = paper_add_by_identifier(identifier=f"https://doi.org/{PLOS_DOI}")
    assert added.created is True
    paper = added.paper
    assert paper.doi == PLOS_DOI and paper.source == "crossref"
    assert paper.title.startswith("Methylphenidate Exposure Induces Dopamine Neuron Loss")
    assert paper.year == 2012 and paper.author_links.count() > 0
    statuses = {name: status["status"] for name, status in added.engines.items()}
    assert statuses == {"crossref": "ok", "openalex": "not_found", "semantic_scholar": "not_found"}
    asked = len(sources.requests)

    again = paper_add_by_identifier(identifier=PLOS_DOI.upper())
    assert again.created is False and again.paper.pk == paper.pk
    assert len(sources.requests) == asked  # answered from the library, no network
    assert Paper.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_arxiv_id_is_added_from_arxiv(sources: ReplayServer, make_project: Any) -> None:
    project = make_project("Speech")
    sources.add(
        "/arxiv/api/query",
        arxiv_recorded("id_1605.08386_s0_m100_199195aa31ad.json"),
        query={"id_list": "1605.08386"},
    )
    added = paper_add_by_identifier(identifier="arXiv:1605.08386", project_ids=[project.id])
    assert added.created is True and added.paper.arxiv_id == "1605.08386"
    assert added.engines["arxiv"]["status"] == "ok"
    assert list(added.paper.projects.values_list("id", flat=True)) == [project.id]


@pytest.mark.django_db(transaction=True)
def test_an_unknown_paper_is_not_found_and_a_failing_lookup_unavailable(
    sources: ReplayServer,
) -> None:
    with pytest.raises(NotFound) as unknown:
        paper_add_by_identifier(identifier="10.9999/does-not-exist")
    assert set(unknown.value.details["engines"]) == {"crossref", "openalex", "semantic_scholar"}
    sources.add("/crossref/works/10.9999%2Fbroken", Reply(500))
    sources.add("/openalex/works/doi:10.9999%2Fbroken", Reply(503))
    sources.add("/s2/graph/v1/paper/DOI:10.9999%2Fbroken", Reply(502))
    with pytest.raises(EngineUnavailable):
        paper_add_by_identifier(identifier="10.9999/broken")
    assert Paper.objects.count() == 0


@pytest.mark.parametrize(
    "identifier",
    ["10.1000/../../../../admin?x=1#frag", "https://doi.org/10.1000/a/./b", "10.1000/%2e%2e/x"],
)
def test_hostile_dois_are_refused_before_any_engine_is_asked(
    sources: ReplayServer, identifier: str
) -> None:
    with pytest.raises(InvalidInput, match="path segment"):
        paper_add_by_identifier(identifier=identifier)
    assert sources.requests == []


@pytest.mark.django_db(transaction=True)
def test_an_anthology_url_is_added_with_its_pdf_address(sources: ReplayServer) -> None:
    """Issue 20: add_paper takes Anthology ids and URLs (Semantic Scholar knows them by
    `ACL:`), and the paper gets the Anthology's PDF address even when S2 names none."""
    paper = json.loads((FIXTURES / "semantic_scholar" / "paper.json").read_text())
    paper["openAccessPdf"] = None
    paper["externalIds"] = {**(paper.get("externalIds") or {}), "ACL": "2020.acl-main.1"}
    sources.add("/s2/graph/v1/paper/ACL:2020.acl-main.1", Reply(200, paper))

    added = paper_add_by_identifier(identifier="https://aclanthology.org/2020.acl-main.1/")

    assert added.created
    assert added.paper.pdf_url == "https://aclanthology.org/2020.acl-main.1.pdf"
    assert added.paper.identifiers.filter(scheme="acl", value="2020.acl-main.1").exists()
    assert [request.path for request in sources.requests] == [
        "/s2/graph/v1/paper/ACL:2020.acl-main.1"
    ]
    again = paper_add_by_identifier(identifier="2020.acl-main.1")
    assert not again.created and again.paper.pk == added.paper.pk


# --- PubMed, PubMed Central and OpenReview ids (engines given by ENGINES_BY_SCHEME) -------


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("pmid:31452104", "pmid", "31452104"),
        ("PMID 31452104", "pmid", "31452104"),
        ("https://pubmed.ncbi.nlm.nih.gov/31452104/", "pmid", "31452104"),
        ("PMC6739224", "pmcid", "PMC6739224"),
        ("https://www.ncbi.nlm.nih.gov/pmc/articles/PMC6739224/", "pmcid", "PMC6739224"),
        ("openreview:YicbFdNTTy", "openreview", "YicbFdNTTy"),
        ("https://openreview.net/forum?id=YicbFdNTTy", "openreview", "YicbFdNTTy"),
    ],
)
def test_pubmed_pmc_and_openreview_ids_are_recognised(text: str, kind: str, value: str) -> None:
    parsed = identifier_parse(text)
    assert (parsed.kind, parsed.value) == (kind, value)


def test_bare_digits_are_not_read_as_a_pmid() -> None:
    with pytest.raises(InvalidInput, match=r"pmid:31452104"):
        identifier_parse("31452104")


PUBMED_RECORD = {
    "title": "A PubMed paper",
    "authors": ["Jane Doe"],
    "year": 2019,
    "doi": "10.1000/pubmed.1",
    "identifiers": {"pmid": "31452104", "pmcid": "PMC6739224"},
}


@pytest.fixture
def id_engines(
    settings: Any, tmp_path: Path, replay_server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> ReplayServer:
    """Plugin engines standing in for PubMed, Europe PMC and OpenReview (the real engines
    are not needed to test how add_paper uses them)."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINES_DIR = tmp_path / "engines"
    settings.ENGINES_ENABLED = []
    settings.ENGINE_MAX_RETRIES = 0
    for engine_id in ("t_pubmed", "t_epmc", "t_openreview"):
        write_plugin(settings.ENGINES_DIR, engine_id, f"{replay_server.url}/{engine_id}")
    registry.refresh()
    monkeypatch.setattr(
        engine_services,
        "ENGINES_BY_SCHEME",
        {"pmid": ("t_pubmed", "t_epmc"), "pmcid": ("t_epmc",), "openreview": ("t_openreview",)},
    )
    return replay_server


@pytest.mark.django_db(transaction=True)
def test_a_pmid_is_added_from_pubmed_and_europe_pmc_and_named_by_its_ids(
    id_engines: ReplayServer,
) -> None:
    id_engines.add("/t_pubmed/paper", Reply(200, PUBMED_RECORD), query={"id": "31452104"})
    id_engines.add("/t_epmc/paper", Reply(200, PUBMED_RECORD), query={"id": "31452104"})
    added = paper_add_by_identifier(identifier="PMID: 31452104")
    assert added.created is True
    assert {name: s["status"] for name, s in added.engines.items()} == {
        "t_pubmed": "ok",
        "t_epmc": "ok",
    }
    assert Paper.objects.count() == 1
    identifiers = dict(added.paper.identifiers.values_list("scheme", "value"))
    assert identifiers == {"pmid": "31452104", "pmcid": "PMC6739224"}
    asked = len(id_engines.requests)
    again = paper_add_by_identifier(identifier="https://pmc.ncbi.nlm.nih.gov/articles/PMC6739224/")
    assert again.created is False and again.paper.pk == added.paper.pk
    assert len(id_engines.requests) == asked  # the library knew it: no engine asked
    assert paper_get(ref="pmid:31452104") == added.paper


@pytest.mark.django_db(transaction=True)
def test_a_pmcid_asks_europe_pmc_and_an_openreview_id_openreview(id_engines: ReplayServer) -> None:
    id_engines.add("/t_epmc/paper", Reply(200, PUBMED_RECORD), query={"id": "PMC6739224"})
    added = paper_add_by_identifier(identifier="pmc6739224")
    assert set(added.engines) == {"t_epmc"} and added.created
    note = {"title": "An OpenReview paper", "authors": ["A. Author"], "year": 2024,
            "identifiers": {"openreview": "YicbFdNTTy"}}  # fmt: skip
    id_engines.add("/t_openreview/paper", Reply(200, note), query={"id": "YicbFdNTTy"})
    reviewed = paper_add_by_identifier(identifier="https://openreview.net/forum?id=YicbFdNTTy")
    assert reviewed.created and reviewed.paper.title == "An OpenReview paper"
    with pytest.raises(NotFound):
        paper_add_by_identifier(identifier="openreview:NoSuchNote")


@pytest.mark.django_db(transaction=True)
def test_an_id_no_engine_here_knows_is_a_clear_error(
    sources: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        engine_services, "ENGINES_BY_SCHEME", {"pmid": ("no_pubmed",), "pmcid": ("no_epmc",)}
    )
    with pytest.raises(EngineUnavailable, match=r"No engine here can look up 'pmid:1' \(PMID\)"):
        paper_add_by_identifier(identifier="pmid:1")
    assert Paper.objects.count() == 0
    assert sources.requests == []


@pytest.mark.django_db(transaction=True)
def test_metadata_with_a_pmid_is_kept_under_it_and_matched_by_it() -> None:
    added = paper_add_from_metadata(
        values={"title": "A trial", "authors": ["Jane Doe"], "year": 2020},
        identifier="PMID: 31452104",
    )
    assert added.created and not added.engines  # no engine asked
    assert dict(added.paper.identifiers.values_list("scheme", "value"))["pmid"] == "31452104"
    again = paper_add_from_metadata(values={"title": "A trial (2)"}, identifier="pmid:31452104")
    assert again.created is False and again.paper.pk == added.paper.pk
    with pytest.raises(InvalidInput):
        paper_add_from_metadata(values={"title": "T"}, identifier="31452104")


@pytest.mark.django_db(transaction=True)
def test_a_biorxiv_page_is_added_from_biorxiv_itself(
    settings: Any, replay_server: ReplayServer
) -> None:
    """A bioRxiv/medRxiv DOI (or the page holding it) is asked of the preprint servers too:
    with them alone enabled, as in a biomedical deployment, it is still added."""
    settings.ENGINES_ENABLED = ["biorxiv", "medrxiv"]
    settings.BIORXIV_API_URL = f"{replay_server.url}/biorxiv-api"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINE_MAX_RETRIES = 0
    registry.refresh()
    details = json.loads((FIXTURES / "biorxiv" / "details_456574.json").read_text())
    replay_server.add("/biorxiv-api/details/biorxiv/10.1101/456574/na/json", Reply(200, details))
    no_posts = json.loads((FIXTURES / "biorxiv" / "constructed_no_posts_found.json").read_text())
    replay_server.add("/biorxiv-api/details/medrxiv/10.1101/456574/na/json", Reply(200, no_posts))

    added = paper_add_by_identifier(identifier="https://www.biorxiv.org/content/10.1101/456574v1")

    assert added.created and added.paper.doi == "10.1101/456574"
    assert added.paper.title == "Complementary subnetworks of cortical somatostatin interneurons"
    assert added.engines["biorxiv"]["status"] == "ok"
    assert added.engines["medrxiv"]["status"] == "not_found"


@pytest.mark.django_db(transaction=True)
def test_a_doi_is_added_from_europe_pmc_where_only_the_biomedical_sources_are_offered(
    settings: Any, replay_server: ReplayServer
) -> None:
    settings.ENGINES_ENABLED = ["europepmc", "pubmed"]
    settings.EUROPEPMC_API_URL = f"{replay_server.url}/epmc"
    settings.NCBI_EUTILS_URL = f"{replay_server.url}/eutils"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINE_MAX_RETRIES = 0
    registry.refresh()
    answer = json.loads((FIXTURES / "europepmc" / "search_cancer_core.json").read_text())
    replay_server.add("/epmc/search", Reply(200, answer))
    empty = (FIXTURES / "pubmed" / "esearch8.xml").read_bytes()  # Count 0
    replay_server.add("/eutils/esearch.fcgi", Reply(200, empty))

    added = paper_add_by_identifier(identifier="https://doi.org/10.1002/HPJA.70059")

    assert added.created and added.paper.doi == "10.1002/hpja.70059"
    assert added.engines["europepmc"]["status"] == "ok"
    assert set(added.engines) == {"europepmc", "pubmed"}  # crossref & co. are not offered here

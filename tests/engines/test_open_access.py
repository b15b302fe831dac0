"""Open-access PDFs (issue 24, item 4): engines/open_access.py against a local server that
answers as OpenAlex, Unpaywall and Semantic Scholar do (tests/fixtures/open_access, see
SOURCE.txt) and serves a real PDF (tests/fixtures/pdfs/2304.02623v1.pdf) at the addresses
they name. The server is on loopback, so the tests allow private URLs as the download
tests do (PDF_ALLOW_PRIVATE_URLS); the refusal test turns it off."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from engines import europepmc, open_access
from engines.open_access import find_and_attach, papers_find_and_attach
from papers.models import Paper, PaperIdentifier, PaperPdf, Passage
from papers.passages.selectors import passage_search
from papers.pdf import fetch
from tests.engines.open_access_builders import (
    PAGES,
    serve_pdf,
    served,
    served_europepmc_answer,
)
from tests.engines.replay import ReplayServer, Reply

DOI = "10.48550/arxiv.2304.02623"
# engines.http.path_segment sends a DOI as one path segment: its '/' encoded.
DOI_SEGMENT = DOI.replace("/", "%2F")
OPENALEX_WORK = f"/works/doi:{DOI_SEGMENT}"
UNPAYWALL_DOI = f"/v2/{DOI_SEGMENT}"
S2_PAPER = f"/graph/v1/paper/DOI:{DOI_SEGMENT}"


def asked(server: ReplayServer, path: str) -> list[dict[str, str]]:
    return [
        {key: values[0] for key, values in request.query.items()}
        for request in server.requests
        if request.path == path
    ]


@pytest.fixture
def oa(replay_server: ReplayServer, settings: Any) -> ReplayServer:
    settings.OPENALEX_API_URL = replay_server.url
    settings.SEMANTIC_SCHOLAR_API_URL = replay_server.url
    settings.UNPAYWALL_API_URL = replay_server.url
    settings.EUROPEPMC_API_URL = replay_server.url
    settings.UNPAYWALL_EMAIL = ""
    settings.CONTACT_EMAIL = ""
    settings.OPENALEX_API_KEY = ""
    settings.SEMANTIC_SCHOLAR_API_KEY = ""
    settings.ENGINES_ENABLED = ["local", "openalex", "semantic_scholar"]
    settings.PDF_ALLOW_PRIVATE_URLS = True
    settings.PDF_DOWNLOAD_TIMEOUT = 5
    return replay_server


@pytest.fixture
def preprint(make_paper: Callable[..., Paper]) -> Paper:
    """The paper of the fixtures, known only by its DOI (no pdf_url, no arXiv id)."""
    return make_paper(
        "Beyond Summarization: Designing AI Support for Real-World Expository Writing Tasks",
        authors=["Zejiang Shen", "Tal August"],
        year=2023,
        doi=DOI,
    )


def found_passages(paper: Paper) -> list[Any]:
    return passage_search(query="ideation during creative writing", paper_ids=[paper.pk])


@pytest.mark.django_db(transaction=True)
def test_an_openalex_pdf_is_downloaded_attached_and_searchable_by_passage(
    oa: ReplayServer, preprint: Paper
) -> None:
    if not django_settings.CELERY_TASK_ALWAYS_EAGER and not os.environ.get("CELERY_WORKER_RUNNING"):
        pytest.skip("a broker is configured but no worker was started (use make test-pg)")
    oa.add(OPENALEX_WORK, Reply(200, served("openalex_work.json", oa)))
    serve_pdf(oa, "/arxiv.org/pdf/2304.02623")

    result = find_and_attach(preprint)

    assert result["status"] == "attached" and result["source"] == "openalex"
    assert result["url"] == f"{oa.url}/arxiv.org/pdf/2304.02623"
    assert result["pages"] == PAGES and result["tried"] == []
    assert result["notes"]["openalex"] == "2 location(s)"  # the not-OA location left out
    assert list(result["notes"]) == ["record", "arxiv", "acl", "pmc", "openalex"]  # then stopped
    assert asked(oa, OPENALEX_WORK) == [{"select": "best_oa_location,locations"}]
    record = PaperPdf.objects.get(paper=preprint)
    assert record.origin == "downloaded" and record.source_url == result["url"]
    # Indexed after commit: in this process on the embedded default, by the worker on PG.
    deadline = time.monotonic() + 60
    while not Passage.objects.filter(paper=preprint).exists():
        assert time.monotonic() < deadline, "the passages were never indexed"
        time.sleep(0.2)
    hits = found_passages(preprint)
    assert hits and hits[0].page == 1 and "ideation" in hits[0].snippet.lower()
    # Asked again: the library has it, nothing is looked up or downloaded.
    oa.requests.clear()
    again = find_and_attach(preprint.pk)
    assert again["status"] == "attached" and again["source"] == "library"
    assert oa.requests == []


@pytest.mark.django_db
def test_a_refused_first_location_falls_through_to_the_next(
    oa: ReplayServer, preprint: Paper
) -> None:
    oa.add(OPENALEX_WORK, Reply(200, served("openalex_work.json", oa)))
    # The best location answers with a landing page, as publishers often do.
    landing = Reply(200, "<html>Sign in</html>", headers={"Content-Type": "text/html"})
    oa.add("/arxiv.org/pdf/2304.02623", landing)
    serve_pdf(oa, "/export.arxiv.org/pdf/2304.02623v1")

    result = find_and_attach(preprint)

    assert result["status"] == "attached" and result["source"] == "openalex"
    assert result["url"] == f"{oa.url}/export.arxiv.org/pdf/2304.02623v1"
    assert result["tried"] == [
        {"url": f"{oa.url}/arxiv.org/pdf/2304.02623", "source": "openalex", "reason": "not_pdf"}
    ]
    paths = [request.path for request in oa.requests]
    assert "/example.org/closed/2304.02623.pdf" not in paths  # is_oa false: never tried
    assert PaperPdf.objects.get(paper=preprint).page_count == PAGES


@pytest.mark.django_db
def test_too_large_and_blocked_addresses_are_refused_and_reported(
    oa: ReplayServer, preprint: Paper, settings: Any
) -> None:
    oa.add(OPENALEX_WORK, Reply(200, served("openalex_work.json", oa)))
    serve_pdf(oa, "/arxiv.org/pdf/2304.02623")
    serve_pdf(oa, "/export.arxiv.org/pdf/2304.02623v1")
    settings.PDF_MAX_BYTES = 2048  # the PDF is ~900 kB
    too_big = find_and_attach(preprint)
    assert too_big["status"] == "failed"
    assert {attempt["reason"] for attempt in too_big["tried"]} == {"too_large"}
    assert len(too_big["tried"]) == 2

    settings.PDF_MAX_BYTES = 2_000_000
    settings.PDF_ALLOW_PRIVATE_URLS = False  # the local server is loopback: refused
    oa.requests.clear()
    blocked = find_and_attach(preprint)
    assert blocked["status"] == "failed"
    assert [attempt["reason"] for attempt in blocked["tried"]] == ["private_address"] * 2
    assert not [r.path for r in oa.requests if "pdf" in r.path]  # no PDF request was sent
    assert not PaperPdf.objects.filter(paper=preprint).exists()


@pytest.mark.django_db
def test_unpaywall_is_asked_only_with_unpaywall_email(
    oa: ReplayServer, preprint: Paper, settings: Any
) -> None:
    settings.ENGINES_ENABLED = ["local"]  # OpenAlex and Semantic Scholar off
    oa.add(UNPAYWALL_DOI, Reply(200, served("unpaywall_doi.json", oa)))
    serve_pdf(oa, "/arxiv.org/pdf/2304.02623v1.pdf")

    without = find_and_attach(preprint)
    assert without["status"] == "none"
    assert without["notes"] == {
        "record": "no PDF", "arxiv": "no PDF", "acl": "no PDF", "pmc": "no PDF",
        "openalex": "skipped: engine not enabled",
        "unpaywall": "skipped: UNPAYWALL_EMAIL not set",
        "semantic_scholar": "skipped: engine not enabled",
        "europepmc": "skipped: engine not enabled",
    }  # fmt: skip
    assert oa.requests == []

    settings.UNPAYWALL_EMAIL = "librarian@example.org"
    with_email = find_and_attach(preprint)
    assert with_email["status"] == "attached" and with_email["source"] == "unpaywall"
    assert with_email["url"] == f"{oa.url}/arxiv.org/pdf/2304.02623v1.pdf"
    assert asked(oa, UNPAYWALL_DOI) == [{"email": "librarian@example.org"}]


@pytest.mark.django_db
def test_a_failing_source_is_reported_and_the_next_one_asked(
    oa: ReplayServer, preprint: Paper
) -> None:
    oa.add(OPENALEX_WORK, Reply(503, {"error": "Service Unavailable"}))
    oa.add(S2_PAPER, Reply(200, served("semantic_scholar_paper.json", oa)))
    serve_pdf(oa, "/arxiv.org/pdf/2304.02623")

    result = find_and_attach(preprint)

    assert result["status"] == "attached" and result["source"] == "semantic_scholar"
    assert result["notes"]["openalex"].startswith("failed: ")
    assert "503" in result["notes"]["openalex"]
    assert asked(oa, S2_PAPER) == [{"fields": "openAccessPdf"}]


@pytest.mark.django_db
def test_a_paper_no_source_knows_is_none(oa: ReplayServer, preprint: Paper) -> None:
    # Unrouted: the local server answers 404, as OpenAlex and S2 do for unknown DOIs.
    result = find_and_attach(preprint)
    assert result["status"] == "none" and result["tried"] == []
    assert result["notes"]["openalex"] == "not found"
    assert result["notes"]["semantic_scholar"] == "not found"
    assert result["source"] is None and result["pages"] is None


@pytest.mark.django_db
def test_arxiv_and_anthology_addresses_need_no_lookup(
    oa: ReplayServer, make_paper: Callable[..., Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "ARXIV_PDF", oa.url + "/arxiv/{}")
    monkeypatch.setattr(fetch, "ACL_ANTHOLOGY_PDF", oa.url + "/acl/{}.pdf")
    acl = make_paper("Construction of the Literature Graph", doi="10.18653/v1/N18-3011")
    arxiv = make_paper("An arXiv Preprint", arxiv_id="2304.02623")
    curated = make_paper("Filed by the importer")
    PaperIdentifier.objects.create(paper=curated, scheme="acl", value="2020.acl-main.1")

    assert find_and_attach(acl, attach=False) == {
        "paper_id": acl.pk, "status": "found", "source": "acl",
        "url": f"{oa.url}/acl/N18-3011.pdf", "pages": None,
        "notes": {"record": "no PDF", "arxiv": "no PDF", "acl": "1 location(s)"}, "tried": [],
    }  # fmt: skip
    assert find_and_attach(arxiv, attach=False)["url"] == f"{oa.url}/arxiv/2304.02623"
    assert find_and_attach(curated, attach=False)["url"] == f"{oa.url}/acl/2020.acl-main.1.pdf"
    assert oa.requests == []  # found without asking any source


@pytest.mark.django_db(transaction=True)
def test_a_batch_counts_what_each_paper_gave(
    oa: ReplayServer, preprint: Paper, make_paper: Callable[..., Paper], settings: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the index runs here (the PG run has a worker)
    oa.add(OPENALEX_WORK, Reply(200, served("openalex_work.json", oa)))
    serve_pdf(oa, "/arxiv.org/pdf/2304.02623")
    unknown = make_paper("Nobody Has This One", doi="10.1234/unknown.1")
    bare = make_paper("No Identifier At All")
    seen: list[int] = []

    report = papers_find_and_attach(
        [preprint.pk, unknown.pk, bare.pk, preprint.pk],
        concurrency=2,
        on_result=lambda result: seen.append(result["paper_id"]),
    )

    assert report.papers == 3 and sorted(seen) == sorted([preprint.pk, unknown.pk, bare.pk])
    assert report.by_status == {"attached": 1, "none": 2}
    assert report.by_source == {"openalex": 1}
    assert report.line() == "3 papers: 1 attached, 2 none, 0 failed (openalex 1)"
    # Papers that have a PDF are left out of the next batch.
    assert open_access.papers_without_pdf([preprint.pk, bare.pk]) == [bare.pk]


BIBTEX = """
@misc{shen2023beyond,
  title = {Beyond Summarization: Designing AI Support for Real-World Expository Writing Tasks},
  author = {Shen, Zejiang and August, Tal}, year = {2023}, doi = {10.48550/arXiv.2304.02623}}
@article{nobody2020, title = {Nobody Has This One}, author = {Body, No}, year = {2020},
  doi = {10.1234/unknown.1}}
@article{down2021, title = {A Source Is Down For This One}, author = {Down, Ada},
  year = {2021}, doi = {10.1234/down.1}}
@article{landing2022, title = {Only A Landing Page}, author = {Page, Lan}, year = {2022},
  doi = {10.1234/landing.1}}
"""


@pytest.mark.django_db(transaction=True)
def test_import_with_open_access_attaches_what_it_finds_and_counts_the_rest(
    oa: ReplayServer, tmp_path: Path, settings: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the index runs here (the PG run has a worker)
    oa.add(OPENALEX_WORK, Reply(200, served("openalex_work.json", oa)))
    serve_pdf(oa, "/arxiv.org/pdf/2304.02623")
    oa.add("/works/doi:10.1234%2Fdown.1", Reply(503, {"error": "Service Unavailable"}))
    landing = {"best_oa_location": {"is_oa": True, "pdf_url": f"{oa.url}/landing"}}
    oa.add("/works/doi:10.1234%2Flanding.1", Reply(200, {**landing, "locations": []}))
    oa.add("/landing", Reply(200, "<html>Sign in</html>", headers={"Content-Type": "text/html"}))
    bib = tmp_path / "refs.bib"
    bib.write_text(BIBTEX, encoding="utf-8")

    def run(*extra: str) -> list[str]:
        out = io.StringIO()
        call_command("import_bibtex", str(bib), "--no-progress", *extra, stdout=out)
        return out.getvalue().splitlines()

    assert not [line for line in run() if "Open-access" in line]  # only when asked
    assert oa.requests == []
    lines = run("--open-access")
    assert lines[-1] == "Open-access PDFs: 4 papers: 1 attached, 2 none, 1 failed (openalex 1)"
    attached = PaperPdf.objects.get(paper__doi=DOI)
    assert attached.origin == "downloaded" and attached.page_count == PAGES
    # Imported again: the paper with its PDF is not looked for again.
    assert run("--open-access")[-1] == "Open-access PDFs: 3 papers: 0 attached, 2 none, 1 failed"


# --- PubMed Central / Europe PMC ---------------------------------------------------------
# The paper of Europe PMC's recorded answer (tests/fixtures/europepmc): in PMC, open access.
PMC_DOI, PMC_PMID, PMCID = "10.1002/hpja.70059", "40437959", "PMC12120539"


@pytest.fixture
def pmc_paper(make_paper: Callable[..., Paper]) -> Paper:
    return make_paper(
        "Co-Designed Culturally Tailored Cancer Screening Promotion Program With "
        "Chinese-Australian: Using a Community Partnership Approach",
        authors=["Cannas Kwok", "Xinyi Xu"],
        year=2025,
        doi=PMC_DOI,
    )


@pytest.fixture
def local_pmc(oa: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> ReplayServer:
    """PMC's PDF address pointed at the local server, which serves the fixture PDF there."""
    monkeypatch.setattr(
        europepmc, "PMC_PDF", f"{oa.url}/europepmc.org/articles/{{pmcid}}?pdf=render"
    )
    serve_pdf(oa, f"/europepmc.org/articles/{PMCID}")
    return oa


@pytest.mark.django_db
def test_a_paper_with_a_pmcid_gets_its_pmc_pdf_without_a_lookup(
    local_pmc: ReplayServer, pmc_paper: Paper
) -> None:
    PaperIdentifier.objects.create(paper=pmc_paper, scheme="pmcid", value=PMCID)

    result = find_and_attach(pmc_paper)

    assert result["status"] == "attached" and result["source"] == "pmc"
    assert result["url"] == f"{local_pmc.url}/europepmc.org/articles/{PMCID}?pdf=render"
    assert list(result["notes"]) == ["record", "arxiv", "acl", "pmc"]
    assert [r.path for r in local_pmc.requests] == [f"/europepmc.org/articles/{PMCID}"]
    assert PaperPdf.objects.get(paper=pmc_paper).page_count == PAGES


@pytest.mark.django_db
def test_europe_pmc_names_the_open_access_pdf_of_a_doi(
    local_pmc: ReplayServer, pmc_paper: Paper, settings: Any
) -> None:
    settings.ENGINES_ENABLED = ["local", "europepmc"]
    local_pmc.add("/search", Reply(200, served_europepmc_answer(PMC_PMID, local_pmc)))

    result = find_and_attach(pmc_paper)

    assert result["status"] == "attached" and result["source"] == "europepmc"
    # The record's fullTextUrlList PDF ("Open access", site Europe_PMC).
    assert result["url"] == f"{local_pmc.url}/europepmc.org/articles/{PMCID}?pdf=render"
    assert result["notes"]["pmc"] == "no PDF"  # no PMCID known before the lookup
    assert result["notes"]["europepmc"] == "1 location(s)"
    assert asked(local_pmc, "/search") == [
        {"query": f'DOI:"{PMC_DOI}"', "format": "json", "resultType": "core", "pageSize": "1"}
    ]


@pytest.mark.django_db
def test_a_subscription_only_europe_pmc_record_gives_no_pdf(
    oa: ReplayServer, make_paper: Callable[..., Paper], settings: Any
) -> None:
    settings.ENGINES_ENABLED = ["local", "europepmc"]
    paper = make_paper("Abscopal response in a patient", year=2025)
    PaperIdentifier.objects.create(paper=paper, scheme="pmid", value="39709209")
    oa.add("/search", Reply(200, served_europepmc_answer("39709209", oa)))

    result = find_and_attach(paper)

    assert result["status"] == "none" and result["notes"]["europepmc"] == "no PDF"
    assert asked(oa, "/search")[0]["query"] == "EXT_ID:39709209 AND SRC:MED"
    assert [r.path for r in oa.requests] == ["/search"]  # nothing downloaded

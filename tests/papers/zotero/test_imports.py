"""`manage.py import_zotero` against the fake Zotero's Better BibTeX JSON-RPC endpoint:
items, citekeys and fields, PDFs attached, re-imports and de-duplication, exit codes."""

from __future__ import annotations

import io
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from core.errors import NotFound
from papers.models import Paper, PaperPdf
from papers.zotero import bbt
from papers.zotero.bbt import BetterBibTeXClient
from papers.zotero.imports import item_key, record_from_csl
from tests.zotero_fake import FakeAttachment, FakeItem, FakeZotero, default_items

pytestmark = pytest.mark.django_db

CITEKEYS = {
    "murray2012quantum",
    "shen2023beyond",
    "lo2023papermage",
    "smith2024deep",
    "gone2021missing",
}


@pytest.fixture
def fake(tmp_path: Path, settings: Any) -> Iterator[FakeZotero]:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    with FakeZotero(default_items(tmp_path / "gone")) as server:
        settings.ZOTERO_BBT_URL = server.bbt_url
        settings.ZOTERO_TIMEOUT = 5
        yield server


def import_zotero(*args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) as the shell would see them."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_zotero", "--no-progress", *args, stdout=out, stderr=err)
    except CommandError as error:
        err.write(str(error))
        return error.returncode, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def rpc_methods(fake: FakeZotero) -> list[str]:
    methods = []
    for _, path, body in fake.requests:
        if path.startswith("/better-bibtex/"):
            for request in body if isinstance(body, list) else [body]:
                methods.append(request["method"])
    return methods


# --- what is imported ------------------------------------------------------------------


def test_import_brings_every_item_with_its_citekey(fake: FakeZotero) -> None:
    code, out, err = import_zotero()
    assert code == 0, err
    assert set(Paper.objects.values_list("citekey", flat=True)) == CITEKEYS
    assert "5 records: 5 created, 0 updated" in out
    assert rpc_methods(fake)[:2] == ["api.ready", "item.search"]


def test_csl_fields_become_paper_fields(fake: FakeZotero) -> None:
    import_zotero()
    murray = Paper.objects.get(citekey="murray2012quantum")
    assert murray.ordered_author_names == [
        "James M. Murray",
        "Adrian Del Maestro",
        "Zlatko Tesanovic",
    ]
    assert (murray.year, murray.publication_date) == (2012, "2012-04-03")
    assert murray.doi == "10.1103/physrevb.85.115117"
    assert murray.arxiv_id == "1111.2011"
    assert murray.venue is not None and murray.venue.name == "Physical Review B"
    assert (murray.volume, murray.number, murray.pages) == ("85", "11", "115117")
    assert murray.entry_type == "article"
    assert murray.source == "zotero"
    assert murray.metadata["zotero"]["key"] == "MURRAY12"
    assert set(murray.identifiers.values_list("scheme", "value")) >= {
        ("zotero", "MURRAY12"),
        ("citekey", "murray2012quantum"),
    }
    shen = Paper.objects.get(citekey="shen2023beyond")
    assert shen.arxiv_id == "2304.02623"  # from the arXiv DOI
    assert shen.year == 2023
    assert sorted(shen.keywords.values_list("name", flat=True)) == [
        "Computer Science - Computation and Language",
        "Writing",
    ]
    book = Paper.objects.get(citekey="smith2024deep")
    assert (book.entry_type, book.year, book.publisher) == ("book", 2024, "Example Press")
    assert book.metadata["csl"] == {
        "editor": [{"literal": "The Deep Learning Collective"}],
        "ISBN": "978-0-00-000000-0",
    }
    papermage = Paper.objects.get(citekey="lo2023papermage")
    assert (papermage.entry_type, papermage.pages) == ("inproceedings", "495-507")


def test_local_pdfs_are_attached_and_missing_ones_reported(fake: FakeZotero) -> None:
    code, out, err = import_zotero()
    assert code == 0
    pdfs = dict(PaperPdf.objects.values_list("paper__citekey", "page_count"))
    assert pdfs == {"murray2012quantum": 8, "shen2023beyond": 4, "lo2023papermage": 13}
    assert "PDFs: 3 attached, 0 already attached, 1 not found on this machine, 0 failed" in out
    missing = str(Path(fake.items[4].attachments[0].path))
    assert (
        f"warning: the PDF of item GONEFILE (gone2021missing) is not on this machine: {missing}"
        in err
    )
    # The snapshot (.html) next to Murray's PDF is not a PDF and is left alone.
    assert PaperPdf.objects.get(paper__citekey="murray2012quantum").original_name == (
        "1111.2011v2.pdf"
    )


def test_attachments_are_asked_in_one_batch(fake: FakeZotero) -> None:
    import_zotero()
    batches = [
        body
        for _, path, body in fake.requests
        if path == "/better-bibtex/json-rpc" and isinstance(body, list)
    ]
    assert len(batches) == 1
    assert [request["params"] for request in batches[0]] == [
        [item.citekey, "My Library"] for item in fake.items
    ]


def test_no_pdfs_option_asks_for_no_attachments(fake: FakeZotero) -> None:
    code, _, _ = import_zotero("--no-pdfs")
    assert code == 0
    assert "item.attachments" not in rpc_methods(fake)
    assert not PaperPdf.objects.exists()


def test_search_imports_only_matching_items(fake: FakeZotero) -> None:
    code, _, _ = import_zotero("--search", "papermage")
    assert code == 0
    assert list(Paper.objects.values_list("citekey", flat=True)) == ["lo2023papermage"]
    searches = [body for _, _, body in fake.requests if isinstance(body, dict)]
    assert {"jsonrpc": "2.0", "method": "item.search", "params": ["papermage"], "id": 1} in (
        searches
    )


def test_whole_library_search_excludes_attachments_and_notes(fake: FakeZotero) -> None:
    import_zotero("--library", "My Library")
    [search] = [
        body
        for _, _, body in fake.requests
        if isinstance(body, dict) and body["method"] == "item.search"
    ]
    assert search["params"] == [bbt.ALL_REGULAR_ITEMS, "My Library"]


def test_project_option_adds_every_paper(fake: FakeZotero) -> None:
    from projects.models import Project

    code, _, _ = import_zotero("--project", "From Zotero", "--no-pdfs")
    assert code == 0
    project = Project.objects.get(name="From Zotero")
    assert project.papers.count() == 5


# --- importing again, de-duplication ------------------------------------------------------


def test_importing_again_changes_nothing(fake: FakeZotero) -> None:
    import_zotero()
    first = {p.citekey: p.pk for p in Paper.objects.all()}
    sha = dict(PaperPdf.objects.values_list("paper_id", "sha256"))
    code, out, _ = import_zotero()
    assert code == 0
    assert "0 created" in out
    assert "PDFs: 0 attached, 3 already attached," in out
    assert {p.citekey: p.pk for p in Paper.objects.all()} == first
    assert dict(PaperPdf.objects.values_list("paper_id", "sha256")) == sha


def test_item_already_in_the_library_is_merged_by_doi(
    fake: FakeZotero, make_paper: Callable[..., Paper]
) -> None:
    existing = make_paper(
        "Quantum criticality for extended nodes",
        authors=["J. Murray"],
        doi="10.1103/PhysRevB.85.115117",
    )
    code, out, _ = import_zotero()
    assert code == 0
    assert "4 created, 1 updated" in out
    assert Paper.objects.count() == 5
    existing.refresh_from_db()
    assert existing.identifiers.filter(scheme="zotero", value="MURRAY12").exists()
    assert PaperPdf.objects.filter(paper=existing).exists()


# --- failures and exit codes --------------------------------------------------------------


def test_item_that_cannot_be_a_paper_is_skipped_with_exit_1(fake: FakeZotero) -> None:
    fake.items.append(FakeItem(key="NOTITLE2", citekey="untitled", title="", creators=[], date=""))
    code, out, err = import_zotero("--no-pdfs")
    assert code == 1
    assert "skipped item NOTITLE2 (untitled): A paper needs a title." in err
    assert "1 failed" in out
    assert Paper.objects.count() == 5


def test_pdf_that_is_not_a_pdf_is_reported_with_exit_1(fake: FakeZotero, tmp_path: Path) -> None:
    broken = tmp_path / "broken.pdf"
    broken.write_text("this is not a PDF")
    fake.items[3].attachments = [FakeAttachment("BROKENPD", broken)]
    code, out, err = import_zotero()
    assert code == 1
    assert "skipped PDF of item NOPDF234 (smith2024deep):" in err
    assert "PDFs: 3 attached, 0 already attached, 1 not found on this machine, 1 failed" in out
    # The item itself is imported all the same.
    assert Paper.objects.filter(citekey="smith2024deep").exists()


def test_empty_search_is_exit_2(fake: FakeZotero) -> None:
    code, _, err = import_zotero("--search", "nothing like this")
    assert code == 2
    assert "Zotero has no items matching 'nothing like this'." in err


def test_closed_zotero_is_exit_2_and_writes_nothing(settings: Any) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/better-bibtex/json-rpc"
    settings.ZOTERO_BBT_URL = url
    code, _, err = import_zotero()
    assert code == 2
    assert (
        f"Zotero is not reachable at {url}: is Zotero running with the Better BibTeX plugin?" in err
    )
    assert not Paper.objects.exists()


def test_slow_zotero_is_exit_2_and_writes_nothing(fake: FakeZotero, settings: Any) -> None:
    settings.ZOTERO_TIMEOUT = 1
    fake.delays["json-rpc"] = 3
    code, _, err = import_zotero()
    assert code == 2
    assert "did not answer api.ready within 1 s" in err
    assert not Paper.objects.exists()


def test_zotero_without_better_bibtex_is_exit_2(fake: FakeZotero, settings: Any) -> None:
    settings.ZOTERO_BBT_URL = f"{fake.origin}/better-bibtex/nothing-here"
    code, _, err = import_zotero()
    assert code == 2
    assert "is Better BibTeX installed" in err


# --- the JSON-RPC client and the CSL mapping ----------------------------------------------


def test_attachment_batches_keep_answers_in_order(
    fake: FakeZotero, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bbt, "ATTACHMENTS_PER_BATCH", 2)
    client = BetterBibTeXClient.from_settings()
    answers = client.attachments(
        [("murray2012quantum", None), ("nobody", None), ("shen2023beyond", "My Library")]
    )
    assert [path for _, path, _ in fake.requests] == ["/better-bibtex/json-rpc"] * 2
    assert answers[0][0]["path"].endswith("1111.2011v2.pdf")  # type: ignore[index]
    assert isinstance(answers[1], NotFound)
    assert answers[1].message == "Better BibTeX: nobody not found"
    assert answers[2][0]["path"].endswith("2304.02623v1.pdf")  # type: ignore[index]


def test_ready_returns_the_versions(fake: FakeZotero) -> None:
    assert BetterBibTeXClient.from_settings().ready() == {
        "zotero": "7.0.15",
        "betterbibtex": "7.0.21",
    }


def test_item_key_is_the_end_of_the_item_uri() -> None:
    assert item_key({"id": "http://zotero.org/users/123/items/ABCD2345"}) == "ABCD2345"
    assert item_key({"id": "http://zotero.org/groups/9/items/WXYZ6789"}) == "WXYZ6789"
    assert item_key({"id": 17}) == ""


def test_csl_names_dates_and_particles() -> None:
    record = record_from_csl(
        {
            "id": "http://zotero.org/users/local/x/items/VANGOGH1",
            "type": "chapter",
            "title": "Letters",
            "citekey": "gogh1888letters",
            "author": [
                {"family": "Gogh", "given": "Vincent", "non-dropping-particle": "van"},
                {"literal": "The Editors"},
            ],
            "issued": {"raw": "Spring 1888"},
            "page": "12–34",
            "keyword": "art, " + "x" * 150,
        }
    )
    assert [a.name for a in record.authors] == ["Vincent van Gogh", "The Editors"]
    assert record.authors[0].person.family == "van Gogh"
    assert (record.year, record.publication_date) == (1888, "")
    assert (record.entry_type, record.pages) == ("incollection", "12--34")
    assert record.keywords == ["art"]
    assert (record.preferred_citekey, record.source_id) == ("gogh1888letters", "VANGOGH1")


def test_pmid_and_pmcid_come_from_csl_variables_or_the_extra_field() -> None:
    base = {"id": "http://zotero.org/users/1/items/ABCD1234", "type": "article-journal",
            "title": "A PubMed paper"}  # fmt: skip
    variables = record_from_csl({**base, "PMID": "31452104", "PMCID": "PMC6739224"})
    extra = record_from_csl({**base, "note": "Publisher: X\nPMID: 31452104\nPMCID: pmc6739224"})
    for record in (variables, extra):
        assert record.identifiers["pmid"] == "31452104"
        assert record.identifiers["pmcid"] == "PMC6739224"
    assert "PMID" not in variables.metadata.get("csl", {})
    assert "pmid" not in record_from_csl({**base, "note": "PMID: none"}).identifiers

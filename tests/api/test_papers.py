"""/api/papers: records, keywords, BibTeX, exports, summaries and sources."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings

from papers.models import Paper
from tests.api.conftest import BRIEF, SOURCE, Api, Library, error

pytestmark = pytest.mark.django_db


def keywords(paper: Paper) -> list[str]:
    return sorted(k.name for k in Paper.objects.get(pk=paper.pk).keywords.all())


# --- records -------------------------------------------------------------------------------


def test_paper_detail_by_paper_id_human_id_and_citekey(api: Api, library: Library) -> None:
    paper = library.attention
    for ref in (str(paper.pk), quote(paper.human_id, safe=""), paper.citekey):
        response = api.get(f"/api/papers/{ref}")
        assert response.status_code == 200, (ref, response.content)
        record = response.json()
        assert record["paper_id"] == paper.pk
        assert record["citekey"] == paper.citekey
        assert record["abstract"].startswith("The Transformer")
        assert record["authors"] == ["Ashish Vaswani", "Noam Shazeer"]
        assert record["projects"] == ["transformers"]
        assert record["authors_detail"][0]["family_name"] == "Vaswani"


def test_a_paper_is_named_by_its_pmid_pmcid_or_openreview_id(api: Api, library: Library) -> None:
    paper = library.attention
    for scheme, value in (
        ("pmid", "31452104"),
        ("pmcid", "PMC6739224"),
        ("openreview", "YicbFdNTTy"),
    ):
        paper.identifiers.create(scheme=scheme, value=value)
    for ref in (
        "pmid:31452104",
        quote("PMID 31452104", safe=""),
        "PMC6739224",
        "openreview:YicbFdNTTy",
    ):
        response = api.get(f"/api/papers/{ref}")
        assert response.status_code == 200, (ref, response.content)
        assert response.json()["paper_id"] == paper.pk
    assert api.get("/api/papers/31452104").status_code == 404  # digits are a paper_id


def test_unknown_paper_is_404_naming_it(api: Api, library: Library) -> None:
    for path in ("/api/papers/999999", "/api/papers/nobody2020nothing", "/api/papers/99/bibtex"):
        body = error(api.get(path), 404)
        assert body["code"] == "not_found"
        assert "paper_id" in body


def test_numbers_that_cannot_be_a_paper_id_are_404_not_500(api: Api, library: Library) -> None:
    # Found by schemathesis: '¹' passes str.isdigit() but not int(); 2**63 overflows the
    # databases' integer columns.
    for ref in ("%C2%B9", str(2**63), "9" * 40):
        assert error(api.get(f"/api/papers/{ref}"), 404)["code"] == "not_found", ref
    body = {"paper_ids": [2**64], "action": "add", "keywords": ["x"]}
    assert error(api.post("/api/papers/keywords", body), 404)["code"] == "not_found"


def test_oversized_paper_reference_is_400(api: Api) -> None:
    body = error(api.get("/api/papers/" + "k" * 700), 400)
    assert body["code"] == "invalid_input"
    assert body["field"] == "paper_id"


def test_paper_metadata_is_compact_with_summary_templates(api: Api, library: Library) -> None:
    record = api.get(f"/api/papers/{library.attention.citekey}/metadata").json()
    assert record["paper_id"] == library.attention.pk
    assert "abstract" not in record
    assert record["preferred_summary_template"] == "brief"
    assert record["available_summary_templates"] == ["brief"]


def test_paper_bibtex_entry(api: Api, library: Library) -> None:
    entry = api.get(f"/api/papers/{library.attention.pk}/bibtex").json()
    assert entry["citekey"] == library.attention.citekey
    assert entry["bibtex"].startswith(f"@article{{{library.attention.citekey},")
    assert "title = {{Attention} {Is} {All} {You} {Need}}" in entry["bibtex"]


# --- keywords ------------------------------------------------------------------------------


def test_keywords_add_remove_and_set_on_several_papers(api: Api, library: Library) -> None:
    refs = [library.attention.pk, library.resnet.citekey]
    added = api.post("/api/papers/keywords", {"paper_ids": refs, "action": "add",
                                              "keywords": ["classic"]})  # fmt: skip
    assert added.status_code == 200
    assert added.json()["keywords_by_paper"] == {
        str(library.attention.pk): ["attention", "classic", "transformers"],
        str(library.resnet.pk): ["classic"],
    }
    removed = api.post(
        "/api/papers/keywords", {"paper_ids": refs, "action": "remove", "keywords": ["classic"]}
    )
    assert removed.json()["keywords_by_paper"][str(library.resnet.pk)] == []
    cleared = api.post("/api/papers/keywords", {"paper_ids": refs, "action": "set", "keywords": []})
    assert cleared.json() == {
        "action": "set",
        "keywords_by_paper": {str(library.attention.pk): [], str(library.resnet.pk): []},
    }


def test_keywords_change_is_all_or_nothing(api: Api, library: Library) -> None:
    body = {"paper_ids": [library.resnet.pk, 999999], "action": "add", "keywords": ["x"]}
    assert error(api.post("/api/papers/keywords", body), 404)["code"] == "not_found"
    assert keywords(library.resnet) == []


@pytest.mark.parametrize(
    "body",
    [
        {"paper_ids": [], "action": "add", "keywords": ["x"]},
        {"paper_ids": list(range(1, 102)), "action": "add", "keywords": ["x"]},
        {"paper_ids": [1], "action": "rename", "keywords": ["x"]},
        {"paper_ids": [1], "action": "add", "keywords": ["k" * 101]},
        {"paper_ids": [1], "action": "add", "keywords": ["x"] * 51},
        {"paper_ids": [1], "action": "add"},
    ],
)
def test_keywords_change_over_a_limit_is_400(api: Api, library: Library, body: dict) -> None:
    found = error(api.post("/api/papers/keywords", body), 400)
    assert found["code"] == "invalid_input"
    assert found["errors"] and all(e["in"] == "body" for e in found["errors"])


def test_keywords_of_one_paper_add_set_and_remove(api: Api, library: Library) -> None:
    path = f"/api/papers/{library.resnet.citekey}/keywords"
    assert api.post(path, {"keywords": ["vision", "Residual"]}).json() == {
        "paper_id": library.resnet.pk,
        "keywords": ["Residual", "vision"],
    }
    assert api.put(path, {"keywords": ["cnn"]}).json()["keywords"] == ["cnn"]
    assert api.delete(f"{path}/cnn").json()["keywords"] == []
    assert keywords(library.resnet) == []
    assert error(api.post(path, {"keywords": []}), 400)["field"] == "keywords"
    assert error(api.put("/api/papers/999999/keywords", {"keywords": []}), 404)


def test_malformed_json_body_is_400(api: Api, library: Library) -> None:
    response = api.client.post(
        "/api/papers/keywords",
        "{not json",
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.token}"},
    )
    assert error(response, 400)["code"] == "invalid_input"


# --- exports ----------------------------------------------------------------------------------


def test_export_returns_each_format_inline(api: Api, library: Library) -> None:
    ids = [library.attention.pk, library.bert.citekey]
    expected = {
        "bibtex": "application/x-bibtex",
        "csv": "text/csv",
        "json": "application/json",
        "jsonl": "application/x-ndjson",
        "markdown": "text/markdown",
        "ris": "application/x-research-info-systems",
    }
    for fmt, content_type in expected.items():
        response = api.get("/api/papers/export", {"paper_ids": ids, "format": fmt})
        assert response.status_code == 200, (fmt, response.content)
        assert response["Content-Type"] == f"{content_type}; charset=utf-8"
        assert library.attention.citekey in response.content.decode()
    rows = list(csv.DictReader(io.StringIO(
        api.get("/api/papers/export", {"paper_ids": ids, "format": "csv"}).content.decode()
    )))  # fmt: skip
    assert [row["paper_id"] for row in rows] == [str(library.attention.pk), str(library.bert.pk)]
    records = json.loads(
        api.get("/api/papers/export", {"paper_ids": ids, "format": "json"}).content
    )
    assert {r["citekey"] for r in records} == {library.attention.citekey, library.bert.citekey}


def test_ris_export_has_one_record_per_paper_with_tagged_fields(api: Api, library: Library) -> None:
    params = {"paper_ids": [library.attention.pk, library.bert.pk], "format": "ris"}
    response = api.get("/api/papers/export", params)
    assert response["Content-Disposition"] == 'inline; filename="papers.ris"'
    records = response.content.decode().split("ER  - \r\n")
    assert len(records) == 3 and records[2] == ""
    attention = records[0].split("\r\n")
    assert attention[:4] == [
        "TY  - JOUR",
        "AU  - Vaswani, Ashish",
        "AU  - Shazeer, Noam",
        "TI  - Attention Is All You Need",
    ]
    assert "PY  - 2017" in attention
    assert "T2  - Advances in Neural Information Processing Systems" in attention
    assert "DO  - 10.5555/3295222.3295349" in attention
    assert ["KW  - attention", "KW  - transformers"] == [x for x in attention if x[:2] == "KW"]
    assert f"ID  - {library.attention.citekey}" in attention
    assert all(line[2:6] == "  - " for line in attention if line)


def test_export_within_a_project_keeps_only_its_papers(api: Api, library: Library) -> None:
    params = {"paper_ids": [library.attention.pk, library.resnet.pk], "format": "jsonl",
              "project_id": "Transformers"}  # fmt: skip
    lines = api.get("/api/papers/export", params).content.decode().splitlines()
    assert [json.loads(line)["paper_id"] for line in lines] == [library.attention.pk]


def test_export_errors(api: Api, library: Library) -> None:
    docx = {"paper_ids": [library.attention.pk], "format": "docx"}
    assert error(api.get("/api/papers/export", docx), 400)["field"] == "format"
    assert error(api.get("/api/papers/export", {"format": "csv"}), 400)
    too_many = {"paper_ids": [str(n) for n in range(1, 102)], "format": "csv"}
    assert error(api.get("/api/papers/export", too_many), 400)["errors"][0]["field"] == "paper_ids"
    assert error(api.get("/api/papers/export", {"paper_ids": [999999], "format": "csv"}), 404)
    in_other = {"paper_ids": [library.resnet.pk], "format": "csv", "project_id": "transformers"}
    assert error(api.get("/api/papers/export", in_other), 400)["field"] == "papers"
    unknown_project = {"paper_ids": [library.resnet.pk], "format": "csv", "project_id": "nope"}
    assert error(api.get("/api/papers/export", unknown_project), 404)["project_id"] == "nope"


def test_export_to_a_file_in_the_exports_folder(api: Api, library: Library) -> None:
    body = {"paper_ids": [library.attention.citekey], "format": "bibtex", "filename": "refs"}
    answer = api.post("/api/papers/export", body)
    assert answer.status_code == 200, answer.content
    result = answer.json()
    assert result["filename"] == "refs.bib"
    assert result["count"] == 1
    written = settings.RESEARCH_DIRECTORY / result["path"]
    assert written.parent == settings.EXPORTS_DIR
    assert library.attention.citekey in written.read_text()
    bad_name = {**body, "filename": "../escape"}
    assert error(api.post("/api/papers/export", bad_name), 400)["field"] == "filename"


def test_export_a_whole_project_never_over_an_earlier_file(api: Api, library: Library) -> None:
    body = {"project_id": "Transformers", "format": "jsonl", "filename": "survey"}
    first = api.post("/api/papers/export", body).json()
    second = api.post("/api/papers/export", body).json()
    assert (first["filename"], second["filename"]) == ("survey.jsonl", "survey-2.jsonl")
    assert first["count"] == 2 and first["success"] is True and "content" not in first
    replaced = api.post("/api/papers/export", {**body, "overwrite": True}).json()
    assert replaced["filename"] == "survey.jsonl"
    inline = api.get("/api/papers/export", {"project_id": "transformers", "format": "csv"})
    assert inline.status_code == 200 and library.bert.citekey in inline.content.decode()
    assert error(api.post("/api/papers/export", {"format": "csv"}), 400)["field"] == "paper_ids"


# --- summaries and sources ----------------------------------------------------------------


def test_summary_preferred_or_by_template_and_truncated(api: Api, library: Library) -> None:
    path = f"/api/papers/{library.attention.pk}/summary"
    summary = api.get(path).json()
    assert summary["template"] == "brief"
    assert json.loads(summary["content"]) == BRIEF
    assert summary["truncated"] is False
    cut = api.get(path, {"template": "brief", "max_chars": 10}).json()
    assert cut["truncated"] is True
    assert cut["content"].startswith(summary["content"][:10])
    assert "[TRUNCATED:" in cut["content"]
    assert cut["total_chars"] == len(summary["content"])


def test_summary_errors(api: Api, library: Library) -> None:
    path = f"/api/papers/{library.attention.pk}/summary"
    missing = error(api.get(path, {"template": "deep_read"}), 404)
    assert missing["code"] == "template_not_available"
    assert missing["available_summary_templates"] == ["brief"]
    assert error(api.get(path, {"template": "../etc"}), 400)["code"] == "invalid_input"
    assert error(api.get(path, {"max_chars": 0}), 400)["code"] == "invalid_input"
    none = error(api.get(f"/api/papers/{library.resnet.pk}/summary"), 404)
    assert none["code"] == "template_not_available"


def test_save_summary_then_read_it_back(api: Api, library: Library) -> None:
    path = f"/api/papers/{library.resnet.pk}/summaries/deep_read"
    saved = api.put(path, {"content": {"tldr": "Residual connections."}})
    assert saved.status_code == 200, saved.content
    assert saved.json()["preferred_summary_template"] == "deep_read"
    assert saved.json()["available_summary_templates"] == ["deep_read"]
    read = api.get(f"/api/papers/{library.resnet.pk}/summary").json()
    assert json.loads(read["content"]) == {"tldr": "Residual connections."}
    assert error(api.put(path, {"content": "not an object"}), 400)
    assert error(api.put(f"/api/papers/{library.resnet.pk}/summaries/bad%20name",
                         {"content": {}}), 400)  # fmt: skip
    assert error(api.put("/api/papers/999999/summaries/brief", {"content": {"a": 1}}), 404)


def test_source_and_translation(api: Api, library: Library) -> None:
    path = f"/api/papers/{library.attention.citekey}/source"
    source = api.get(path).json()
    assert source == {"paper_id": library.attention.pk, "lang": None, "content": SOURCE,
                      "total_chars": len(SOURCE), "truncated": False}  # fmt: skip
    cut = api.get(path, {"max_chars": 100}).json()
    assert cut["truncated"] is True and len(cut["content"]) < len(SOURCE)
    assert api.get(path, {"lang": "DE"}).json()["content"] == "# Aufmerksamkeit"
    assert error(api.get(path, {"lang": "fr"}), 404)["code"] == "asset_not_found"
    assert error(api.get(path, {"lang": "not a language"}), 400)["code"] == "invalid_input"
    assert error(api.get(f"/api/papers/{library.resnet.pk}/source"), 404)["code"] == (
        "asset_not_found"
    )


# --- attach_pdf ----------------------------------------------------------------------------


@pytest.fixture
def pdf_server(settings: Any, tmp_path: Any) -> Iterator[Any]:
    from tests.papers.pdf.builders import PdfServer

    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.PDF_ALLOW_PRIVATE_URLS = True  # the local server stands for the web
    running = PdfServer()
    yield running
    running.close()


def test_attach_pdf_from_a_url_returns_the_record_with_has_pdf(
    api: Api, library: Library, pdf_server: Any
) -> None:
    path = f"/api/papers/{library.resnet.citekey}/pdf"
    response = api.post(path, {"url": pdf_server.url("/paper.pdf")})
    assert response.status_code == 200, response.content
    record = response.json()
    assert record["has_pdf"] is True and record["paper_id"] == library.resnet.pk
    assert record["pdf"]["page_count"] == 4 and record["tried"] == []
    assert api.get(f"/api/papers/{library.resnet.pk}").json()["has_pdf"] is True


def test_attach_pdf_errors_say_what_was_tried(
    api: Api, library: Library, pdf_server: Any, settings: Any, read_token: str
) -> None:
    path = f"/api/papers/{library.resnet.pk}/pdf"
    failed = error(api.post(path, {"url": pdf_server.url("/missing")}), 502)
    assert failed["code"] == "asset_fetch_failed"
    assert failed["tried"][0]["reason"] == "http_error" and "HTTP 404" in failed["message"]
    nowhere = error(api.post(path, {}), 404)
    assert nowhere["code"] == "no_pdf_location"
    settings.PDF_ALLOW_PRIVATE_URLS = False
    refused = error(api.post(path, {"url": pdf_server.url("/paper.pdf")}), 502)
    assert refused["tried"][0]["reason"] == "private_address"
    assert pdf_server.requests == ["/missing"]
    assert error(api.post(path, {"url": "x" * 2001}), 400)["code"] == "invalid_input"
    assert error(api.post(path, {"url": pdf_server.url("/paper.pdf")}, token=read_token), 403)

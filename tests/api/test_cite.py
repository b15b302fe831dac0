"""/api/papers/cite (references and in-text citations in a CSL style) and the bibliography
and csl-json formats of /api/papers/export."""

from __future__ import annotations

import json
import uuid

import pytest
from django.conf import settings

from tests.api.conftest import Api, Library, error

pytestmark = pytest.mark.django_db

ATTENTION_APA = (
    "Vaswani, A., & Shazeer, N. (2017). Attention Is All You Need. Advances in Neural "
    "Information Processing Systems. https://doi.org/10.5555/3295222.3295349"
)


def test_cite_gives_references_and_in_text_citations_with_pages(
    api: Api, library: Library, read_token: str
) -> None:
    attention, bert = library.attention, library.bert
    params = {
        "paper_ids": [attention.citekey, str(bert.pk)],
        "style": "apa",
        "locators": [f"{attention.citekey}:5", f"{bert.pk}:12-14"],
    }
    response = api.get("/api/papers/cite", params, token=read_token)  # a read is enough
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["style"] == "apa"
    assert body["style_title"] == "APA Style 7th edition"
    assert body["locale"] == "en-US"
    assert [e["paper_id"] for e in body["entries"]] == [bert.pk, attention.pk]  # Devlin first
    assert body["entries"][1] == {
        "paper_id": attention.pk,
        "citekey": attention.citekey,
        "reference": ATTENTION_APA,
        "in_text": "(Vaswani & Shazeer, 2017, p. 5)",
    }
    assert body["entries"][0]["in_text"] == "(Devlin & Chang, 2019, pp. 12–14)"
    assert body["citation"] == ("(Devlin & Chang, 2019, pp. 12–14; Vaswani & Shazeer, 2017, p. 5)")


def test_cite_in_html_and_another_style(api: Api, library: Library) -> None:
    params = {"paper_ids": [library.attention.pk], "style": "ieee", "format": "html"}
    body = api.get("/api/papers/cite", params).json()
    assert body["entries"][0]["reference"] == (
        "[1] A. Vaswani and N. Shazeer, “Attention Is All You Need,” <i>Advances in Neural "
        "Information Processing Systems</i>, 2017, doi: 10.5555/3295222.3295349."
    )
    assert body["entries"][0]["in_text"] == "[1]"


def test_cite_errors(api: Api, library: Library, anonymous: Api) -> None:
    ref = library.attention.citekey
    unknown = error(api.get("/api/papers/cite", {"paper_ids": [ref], "style": "ieeee"}), 400)
    assert unknown["field"] == "style"
    assert "ieee" in unknown["suggestions"]
    assert error(api.get("/api/papers/cite", {"paper_ids": ["nobody2099"]}), 404)
    bad_locator = {"paper_ids": [ref], "locators": ["five"]}
    assert error(api.get("/api/papers/cite", bad_locator), 400)["field"] == "locators"
    not_cited = {"paper_ids": [ref], "locators": [f"{library.bert.citekey}:5"]}
    assert "not cited" in error(api.get("/api/papers/cite", not_cited), 400)["message"]
    assert error(api.get("/api/papers/cite", {"paper_ids": [ref], "locale": "xx-YY"}), 400)
    assert error(api.get("/api/papers/cite", {}), 400)
    assert anonymous.get("/api/papers/cite", {"paper_ids": [ref]}).status_code == 401


def test_export_as_a_bibliography_and_as_csl_json(api: Api, library: Library) -> None:
    params = {"paper_ids": [library.attention.pk], "format": "bibliography"}
    response = api.get("/api/papers/export", params)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == ATTENTION_APA + "\n"
    vancouver = api.get("/api/papers/export", {**params, "style": "vancouver"}).content.decode()
    assert vancouver.startswith("1. Vaswani A, Shazeer N. Attention Is All You Need.")
    styled_csv = {"paper_ids": [library.attention.pk], "format": "csv", "style": "apa"}
    assert error(api.get("/api/papers/export", styled_csv), 400)["field"] == "style"

    csl = api.get("/api/papers/export", {"paper_ids": [library.attention.pk],
                                         "format": "csl-json"})  # fmt: skip
    assert csl["Content-Type"] == "application/vnd.citationstyles.csl+json; charset=utf-8"
    items = json.loads(csl.content)
    assert items[0]["id"] == library.attention.citekey
    assert items[0]["author"][0] == {"family": "Vaswani", "given": "Ashish"}


def test_export_a_bibliography_to_a_file(api: Api, library: Library) -> None:
    name = f"refs-{uuid.uuid4().hex[:8]}"  # the exports folder may outlive a test run
    body = {"paper_ids": [library.attention.pk], "format": "bibliography", "style": "ieee",
            "filename": name}  # fmt: skip
    response = api.post("/api/papers/export", body)
    assert response.status_code == 200, response.content
    assert response.json()["filename"] == f"{name}.txt"
    written = settings.EXPORTS_DIR / f"{name}.txt"
    assert written.read_text(encoding="utf-8").startswith("[1] A. Vaswani and N. Shazeer, “")

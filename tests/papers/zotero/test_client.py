"""The mcp-zotero-api client against the fake Zotero (tests/zotero_fake.py): every route's
answer, and every failure turned into the domain error an agent can act on."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.errors import InvalidInput, NotFound
from papers.pdf.spec import OutlineEntry
from papers.zotero.client import ZoteroClient
from papers.zotero.errors import ZoteroError, ZoteroTimeout, ZoteroUnreachable
from tests.zotero_fake import FakeZotero, default_items


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeZotero]:
    with FakeZotero(default_items(tmp_path)) as server:
        yield server


@pytest.fixture
def client(fake: FakeZotero) -> ZoteroClient:
    return ZoteroClient(base_url=fake.url, timeout=5)


def closed_port() -> int:
    """A port with nothing listening on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_from_settings_reads_url_and_timeout(settings: pytest.FixtureRequest) -> None:
    settings.ZOTERO_URL = "http://127.0.0.1:9/mcp/"  # type: ignore[attr-defined]
    settings.ZOTERO_TIMEOUT = 3  # type: ignore[attr-defined]
    client = ZoteroClient.from_settings()
    assert client.base_url == "http://127.0.0.1:9/mcp"
    assert client.timeout == 3.0


def test_ping_gets_the_ping_route(client: ZoteroClient, fake: FakeZotero) -> None:
    client.ping()
    assert fake.requests == [("GET", "/mcp/ping", None)]


def test_item_by_citekey_posts_the_citekey_and_reads_the_item(
    client: ZoteroClient, fake: FakeZotero
) -> None:
    item = client.item_by_citekey("murray2012quantum")
    assert fake.posted("citekey") == [{"citekey": "murray2012quantum"}]
    assert item.key == "MURRAY12"
    assert item.item_type == "journalArticle"
    assert item.title.startswith("Quantum Criticality")
    assert item.creators[0]["lastName"] == "Murray"
    assert item.date == "2012-04-03"
    assert [(a.key, a.content_type) for a in item.attachments] == [("MURRAYPF", "application/pdf")]


def test_unknown_citekey_is_not_found_with_zoteros_message(client: ZoteroClient) -> None:
    with pytest.raises(NotFound) as raised:
        client.item_by_citekey("nobody1999nothing")
    assert raised.value.message == "Zotero: Item not found for citekey (citekey: nobody1999nothing)"
    assert raised.value.details["zotero"] == {
        "error": "Item not found for citekey",
        "citekey": "nobody1999nothing",
    }


def test_a_400_is_invalid_input_with_zoteros_message(client: ZoteroClient) -> None:
    with pytest.raises(InvalidInput) as raised:
        client.item_by_citekey("")
    assert raised.value.message == "Zotero: Missing required field: citekey"


def test_pdf_outline_keeps_levels_and_pages(client: ZoteroClient) -> None:
    outline = client.pdf_outline("MURRAY12")
    assert outline.attachment_key == "MURRAYPF"
    assert outline.page_count == 8
    assert len(outline.entries) == 11
    assert outline.entries[4] == OutlineEntry(level=3, title="A Ordered Phase", page=4)


def test_pdf_without_bookmarks_has_an_empty_outline(client: ZoteroClient) -> None:
    outline = client.pdf_outline("PAPERPDF")
    assert (outline.page_count, outline.entries) == (13, [])


def test_pdf_pages_reads_real_text_per_page(client: ZoteroClient, fake: FakeZotero) -> None:
    text = client.pdf_pages("MURRAYPF", "1,3")
    assert fake.posted("readpdf") == [{"key": "MURRAYPF", "pages": "1,3"}]
    assert [p.page for p in text.pages] == [1, 3]
    assert text.pages[0].text.startswith("Quantum Criticality for Extended Nodes")
    assert not text.pages[0].truncated


def test_item_without_pdf_is_not_found(client: ZoteroClient) -> None:
    with pytest.raises(NotFound) as raised:
        client.pdf_pages("NOPDF234", "1")
    assert raised.value.message == "Zotero: No PDF attachment for key (key: NOPDF234)"


def test_a_missing_pdf_file_names_the_item_and_the_path(client: ZoteroClient) -> None:
    with pytest.raises(ZoteroError) as raised:
        client.pdf_outline("GONEFILE")
    assert raised.value.code == "zotero_error"
    path = raised.value.as_dict()["path"]
    assert path.endswith("deleted.pdf")
    assert raised.value.message.startswith(
        f"The PDF of Zotero item GONEFILE is missing on this machine: {path} does not exist "
        "(Zotero: Internal error: PDF file not found"
    )


def test_highlight_out_of_range_is_invalid_input_with_the_range(client: ZoteroClient) -> None:
    with pytest.raises(InvalidInput) as raised:
        client.highlight_create(key="MURRAY12", text="Bethe", page=99, color="#5fb236")
    assert raised.value.message == "Zotero: page out of range (range: 1..8)"


def test_highlight_text_not_found_is_not_found(client: ZoteroClient) -> None:
    with pytest.raises(NotFound) as raised:
        client.highlight_create(key="MURRAY12", text="no such words here", page=1, color="#aaaaaa")
    assert raised.value.message == "Zotero: Text not found on page 1 (use exact, unique text)"


def test_highlight_returns_the_annotation(client: ZoteroClient, fake: FakeZotero) -> None:
    annotation = client.highlight_create(
        key="MURRAY12", text="Bethe Lattice", page=1, color="#5fb236", comment="key idea"
    )
    assert fake.posted("highlight") == [
        {
            "key": "MURRAY12",
            "text": "Bethe Lattice",
            "page": 1,
            "color": "#5fb236",
            "comment": "key idea",
        }
    ]
    assert annotation["parentItemKey"] == "MURRAYPF"
    assert annotation["rects"]


def test_annotation_error_from_zotero_is_passed_through(client: ZoteroClient) -> None:
    body = {
        "parentItemKey": "NOTATTCH",
        "annotationType": "image",
        "position": {"pageIndex": 0, "rects": [[1, 2, 3, 4]]},
    }
    with pytest.raises(NotFound) as raised:
        client.annotation_create(body)
    assert raised.value.message == "Zotero: Attachment not found (key: NOTATTCH)"


def test_connection_refused_says_zotero_is_not_reachable() -> None:
    url = f"http://127.0.0.1:{closed_port()}/mcp"
    with pytest.raises(ZoteroUnreachable) as raised:
        ZoteroClient(base_url=url, timeout=2).item_by_citekey("murray2012quantum")
    assert raised.value.code == "zotero_unreachable"
    assert raised.value.message == (
        f"Zotero is not reachable at {url}: is Zotero running with the mcp-zotero-api plugin?"
    )


def test_unknown_host_says_zotero_is_not_reachable() -> None:
    url = "http://zotero.invalid:23119/mcp"
    with pytest.raises(ZoteroUnreachable) as raised:
        ZoteroClient(base_url=url, timeout=2).ping()
    assert raised.value.message.startswith(f"Zotero is not reachable at {url}:")


def test_slow_zotero_is_a_timeout(fake: FakeZotero) -> None:
    fake.delays["pdfoutline"] = 3
    started = time.monotonic()
    with pytest.raises(ZoteroTimeout) as raised:
        ZoteroClient(base_url=fake.url, timeout=0.5).pdf_outline("MURRAY12")
    assert time.monotonic() - started < 2.5
    assert raised.value.code == "zotero_timeout"
    assert "did not answer /pdfoutline within 0.5 s (ZOTERO_TIMEOUT)" in raised.value.message


def test_zotero_without_the_plugin_says_so(fake: FakeZotero) -> None:
    # Zotero's own server answers routes nobody registered with a plain-text 404.
    client = ZoteroClient(base_url=f"{fake.origin}/not-the-plugin", timeout=5)
    with pytest.raises(ZoteroUnreachable) as raised:
        client.item_by_citekey("murray2012quantum")
    assert raised.value.details["reason"] == "plugin_missing"
    assert "is the mcp-zotero-api plugin installed and enabled?" in raised.value.message

"""Faults of PDFs and of Zotero (issue 10 part 2): damaged and encrypted files, downloads
that break off, stall or answer HTML, a stored PDF damaged on disk, and a Zotero that is
closed, hangs up mid-answer, stalls, trickles and comes back.

Everything runs against a real `manage.py serve` process, through the MCP SDK's client,
the admin site over HTTP and real `manage.py attach_pdf` / `import_zotero` processes;
batches of attachments and downloads go through PROBE, one process calling the services
that all of these call (saving a Django start per case). Each
fault must end, within a bounded time, in a clear error (a stable code or reason, a
message a person understands, no traceback, no server path), leave no half-written or
temporary file in the knowledge base or in the processes' TMPDIR, leave the paper's data
and its good PDF as they were, and the server answering normally afterwards. Every call
has a time limit, so a hang fails the test instead of blocking the run.

Papers (tests/mcp/seed_library.py): `attention` has 2304.02623v1.pdf and takes the damaged
attachments, `bert` has papermage.pdf and takes the broken downloads, `unfiled` has
1111.2011v2.pdf, which gets damaged on disk, `resnet` has no PDF until it gets one
protected by an owner password. Zotero is tests/zotero_fake.py's behind FlakyZotero.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.faults.flaky_sources import (
    FlakyZotero,
    PdfHost,
    encrypted_pdf,
    random_pdf,
    truncated_pdf,
    write,
)
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    SEED_SCRIPT,
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
    tool_error,
)
from tests.security.conftest import LEAK_MARKERS
from tests.zotero_fake import PDFS, FakeZotero, default_items

pytestmark = [pytest.mark.server, pytest.mark.anyio]

QUANTUM = PDFS / "1111.2011v2.pdf"  # 8 pages, nested outline
EXPOSITORY = PDFS / "2304.02623v1.pdf"  # 4 pages, flat outline
PAPERMAGE = PDFS / "papermage.pdf"  # 13 pages, no outline
WRAPPED = (
    "Recent work has shown that leveraging this new technology can transform writing in "
    "many scenarios such as ideation during creative writing, editing support, and "
    "summarization."
)  # on page 1 of EXPOSITORY

ZOTERO_TIMEOUT = 1  # seconds, the least the setting allows
PDF_DOWNLOAD_TIMEOUT = 2
CALL_LIMIT = 30.0  # a tool call that takes longer than this is a hang
CLI_LIMIT = 60.0  # a command that takes longer than this is a hang
# What "at once" allows for a call (its own MCP session included) on a busy machine. The
# faults take far longer when mishandled: a stalled answer lasts STALL_LIMIT (60 s), a
# trickled one well over CALL_LIMIT.
QUICK = 5.0
ADMIN_PASSWORD = secrets.token_urlsafe(16)

# Attach files or download URLs through the services every interface calls (attach_pdf,
# the admin, the download task, the Zotero import), many in one process: one JSON line per
# "paper_id|file or URL" with the outcome and how long it took.
PROBE = """
import json, os, sys, time
sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
import django
django.setup()
from pathlib import Path
from papers.pdf.services import pdf_attach_file, pdf_download
from core.errors import DomainError
action, *items = sys.argv[1:]
for item in items:
    paper_id, target = item.split("|", 1)
    started = time.monotonic()
    try:
        if action == "attach":
            record = pdf_attach_file(paper_id=int(paper_id), path=Path(target))
        else:
            record = pdf_download(paper_id=int(paper_id), url=target)
    except DomainError as error:
        outcome = {"refused": True, **error.as_dict()}
    else:
        outcome = {"refused": False, "sha256": record.sha256}
    outcome.update(item=item, seconds=time.monotonic() - started)
    print(json.dumps(outcome, default=str), flush=True)
"""


@dataclass
class Faults:
    kb: KnowledgeBase
    server: LiveServer
    zotero: FlakyZotero
    host: PdfHost
    work: Path  # the damaged files the tests attach (outside the knowledge base)
    tmp: Path  # TMPDIR of the server and of every command

    def paper_id(self, name: str) -> int:
        return int(self.kb.paper(name)["paper_id"])

    def citekey(self, name: str) -> str:
        return str(self.kb.paper(name)["citekey"])


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def run(env: dict[str, str], *args: str) -> Finished:
    """`python ARGS` in the repository with `env`; one that outlives CLI_LIMIT hangs."""
    started = time.monotonic()
    process = subprocess.Popen(
        [PYTHON, *args], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=CLI_LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"{args[:3]!r} did not finish within {CLI_LIMIT} s: it hangs")
    return Finished(process.returncode, stdout, stderr, time.monotonic() - started)


def manage_args(*args: str) -> list[str]:
    return ["manage.py", *args]


def probe(faults: Faults, action: str, items: list[tuple[int, str]]) -> list[dict[str, Any]]:
    done = run(faults.kb.env, "-c", PROBE, action, *(f"{pid}|{target}" for pid, target in items))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    outcomes = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(outcomes) == len(items), done.stdout
    return outcomes


@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Faults]:
    directory = tmp_path_factory.mktemp("faults-kb")
    work = tmp_path_factory.mktemp("faults-files")
    tmp = tmp_path_factory.mktemp("faults-tmp")
    with (
        server_database("faults") as database_url,
        FakeZotero(default_items(work / "gone")) as fake,
        FlakyZotero(fake) as zotero,
        PdfHost(QUANTUM.read_bytes()) as host,
    ):
        # No broker: downloads and the markdown conversion run in the process that asks
        # (a broker would hand them to a worker with another database).
        env = {
            name: value
            for name, value in base_env(directory, database_url).items()
            if name not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
        }
        env.update(
            TMPDIR=str(tmp),
            PDF_ALLOW_PRIVATE_URLS="true",  # the PDF host is on loopback
            PDF_DOWNLOAD_TIMEOUT=str(PDF_DOWNLOAD_TIMEOUT),
            ZOTERO_URL=zotero.url,
            ZOTERO_BBT_URL=zotero.bbt_url,
            ZOTERO_TIMEOUT=str(ZOTERO_TIMEOUT),
            ADMIN_USERNAME="admin",
            ADMIN_PASSWORD=ADMIN_PASSWORD,
            EMBEDDINGS_ENABLED="false",  # no semantic search here; the model costs seconds
        )
        seeded = run(env, str(SEED_SCRIPT))
        assert seeded.returncode == 0, seeded.stderr
        kb = KnowledgeBase(directory, env, json.loads(seeded.stdout.strip().splitlines()[-1]))
        attached = run(
            env,
            "-c",
            PROBE,
            "attach",
            *(
                f"{kb.paper(name)['paper_id']}|{path}"
                for name, path in (
                    ("attention", EXPOSITORY),
                    ("bert", PAPERMAGE),
                    ("unfiled", QUANTUM),
                )
            ),
        )
        assert attached.returncode == 0, attached.stderr
        assert '"refused": true' not in attached.stdout, attached.stdout
        with running_server(kb) as server:
            yield Faults(kb, server, zotero, host, work, tmp)


@pytest.fixture(autouse=True)
def zotero_back_to_normal(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test starts with Zotero running and answering normally."""
    yield
    if "faults" in request.fixturenames:
        zotero: FlakyZotero = request.getfixturevalue("faults").zotero
        zotero.set_mode("normal")
        if not zotero.running:
            zotero.start()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --- what every fault must leave ------------------------------------------------------------


def assert_clear(message: str, faults: Faults) -> None:
    """A sentence for a person: not empty, no traceback, no path of the server's files."""
    assert len(message) >= 20 and message[0].isupper(), message
    markers = [*LEAK_MARKERS, str(faults.kb.directory), str(faults.tmp)]
    leaked = [marker for marker in markers if marker in message]
    assert not leaked, f"message leaks {leaked}: {message}"


def files_state(faults: Faults) -> dict[str, str]:
    """Every file of the PDF store (sha256 by name) and of TMPDIR (where libraries keep a
    few files of their own, so what matters is that it does not change). No staging
    (.part) or temporary (.tmp) file may be among them."""
    state: dict[str, str] = {}
    for root in (faults.kb.directory / "downloads", faults.tmp):
        for path in sorted(root.rglob("*")):
            if path.is_file():
                name = f"{root.name}/{path.relative_to(root)}"
                state[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    leftovers = [name for name in state if name.endswith((".part", ".tmp"))]
    assert not leftovers, f"half-written or temporary files left: {leftovers}"
    return state


def query(faults: Faults, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """One statement on the knowledge base's database (`?` placeholders), committed."""
    url = faults.kb.env.get("DATABASE_URL")
    if url:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            cursor = pg.execute(sql.replace("?", "%s"), params)
            return list(cursor.fetchall()) if cursor.description else []
    path = faults.kb.directory / "research.db"
    with contextlib.closing(sqlite3.connect(path, timeout=10)) as lite, lite:
        return list(lite.execute(sql, params).fetchall())


def library_state(faults: Faults) -> dict[str, Any]:
    """The PDF records, annotations and papers, as the database holds them."""
    return {
        "pdfs": query(
            faults,
            "SELECT paper_id, file_name, annotated_file_name, sha256, size, page_count, origin,"
            " original_name, source_url FROM papers_paperpdf ORDER BY paper_id",
        ),
        "annotations": query(
            faults, "SELECT id, paper_id, page, kind, color FROM papers_annotation ORDER BY id"
        ),
        "papers": query(
            faults, "SELECT paper_id, title, pdf_url FROM papers_paper ORDER BY paper_id"
        ),
    }


def pdf_row(faults: Faults, name: str) -> dict[str, Any]:
    rows = query(
        faults,
        "SELECT file_name, annotated_file_name, sha256, size, page_count FROM papers_paperpdf"
        " WHERE paper_id = ?",
        (faults.paper_id(name),),
    )
    if not rows:
        return {}
    keys = ("file_name", "annotated_file_name", "sha256", "size", "page_count")
    return dict(zip(keys, rows[0], strict=True))


async def call(faults: Faults, tool: str, arguments: dict[str, Any]) -> tuple[Any, float]:
    """One tool call in a session of its own, failing the test if it hangs."""
    started = time.monotonic()
    with anyio.fail_after(CALL_LIMIT):
        async with mcp_client(faults.server.mcp_url) as client:
            result = await client.call_tool(tool, arguments)
    return result, time.monotonic() - started


async def clear_error(
    faults: Faults, tool: str, arguments: dict[str, Any], code: str, limit: float = CALL_LIMIT
) -> dict[str, Any]:
    """Call a tool that must fail with an isError result of `code`, within `limit` s."""
    result, seconds = await call(faults, tool, arguments)
    error = tool_error(result)
    assert error["code"] == code, error
    assert_clear(error["message"], faults)
    assert seconds < limit, f"{tool} took {seconds:.1f} s"
    return error


async def server_answers_normally(faults: Faults) -> None:
    """The library's own PDF tools still work: the server is not stuck or broken."""
    result, _ = await call(
        faults, "read_pdf_pages", {"paper_id": faults.paper_id("attention"), "pages": "1"}
    )
    assert not result.is_error
    assert "Recent work has shown" in result.content[0].text


def assert_cli_refused(done: Finished, faults: Faults, pattern: str) -> str:
    """A command that refused cleanly: exit code 1 and one CommandError line."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    [message] = [
        line.removeprefix("CommandError: ")
        for line in done.stderr.splitlines()
        if line.startswith("CommandError: ")
    ]
    assert re.search(pattern, message), message
    assert_clear(message, faults)
    return message


# --- (a), (b): damaged and encrypted files -------------------------------------------------


async def test_damaged_or_encrypted_files_are_refused_and_change_nothing(faults: Faults) -> None:
    before_files, before_library = files_state(faults), library_state(faults)
    expository = EXPOSITORY.read_bytes()
    cases = {
        # file -> the reason of the refusal
        "random.pdf": (random_pdf(), "unreadable"),
        "cut-at-half.pdf": (truncated_pdf(PAPERMAGE.read_bytes(), 0.5), "truncated"),
        "cut-at-90.pdf": (truncated_pdf(expository, 0.9), "truncated"),
        "header-only.pdf": (expository[:1024], "truncated"),
        "user-password.pdf": (
            encrypted_pdf(expository, user_password="secret", owner_password="owner"),
            "encrypted",
        ),
    }
    items = [
        (faults.paper_id(paper), str(write(faults.work / name, data)))
        for name, (data, _) in cases.items()
        for paper in ("attention", "resnet")  # one with a good PDF, one without any
    ]
    outcomes = probe(faults, "attach", items)
    for index, (name, (_, reason)) in enumerate(cases.items()):
        for outcome in outcomes[2 * index : 2 * index + 2]:
            assert outcome["refused"], (name, outcome)
            assert (outcome["code"], outcome["reason"]) == ("not_a_pdf", reason), (name, outcome)
            assert_clear(outcome["message"], faults)
            assert outcome["seconds"] < QUICK, (name, outcome)
    assert files_state(faults) == before_files
    assert library_state(faults) == before_library
    await server_answers_normally(faults)


async def test_pdf_with_only_an_owner_password_is_attached_and_works(faults: Faults) -> None:
    """Such a PDF opens without a password (the owner password only restricts printing,
    copying, editing, which MuPDF does not enforce): the library reads it, searches it and
    annotates it like any other."""
    protected = encrypted_pdf(EXPOSITORY.read_bytes(), user_password=None, owner_password="own")
    path = write(faults.work / "owner-password.pdf", protected)
    done = run(faults.kb.env, *manage_args("attach_pdf", faults.citekey("resnet"), str(path)))
    assert done.returncode == 0, done.stderr
    assert "(4 pages" in done.stdout
    paper_id = faults.paper_id("resnet")
    outline, _ = await call(faults, "get_pdf_outline", {"paper_id": paper_id})
    assert tool_data(outline)["total_pages"] == 4
    assert tool_data(outline)["has_outline"] is True
    pages, _ = await call(faults, "read_pdf_pages", {"paper_id": paper_id, "section": "Intro"})
    assert not pages.is_error, pages
    assert "Recent work has shown" in pages.content[0].text
    highlight, _ = await call(
        faults, "create_highlight", {"paper_id": paper_id, "page": 1, "text": WRAPPED}
    )
    assert not highlight.is_error, highlight
    row = pdf_row(faults, "resnet")
    annotated = faults.kb.directory / "downloads" / row["annotated_file_name"]
    assert annotated.read_bytes().startswith(b"%PDF-")
    files_state(faults)


@contextlib.contextmanager
def admin_client(faults: Faults) -> Iterator[httpx2.Client]:
    """An HTTP client logged in to the server's admin site."""
    with httpx2.Client(base_url=faults.server.base_url, timeout=CALL_LIMIT) as client:
        client.get("/admin/login/")
        answer = client.post(
            "/admin/login/",
            data={
                "username": "admin",
                "password": ADMIN_PASSWORD,
                "csrfmiddlewaretoken": client.cookies["csrftoken"],
                "next": "/admin/",
            },
        )
        assert answer.status_code == 302, answer.text[:500]
        yield client


def test_admin_upload_of_damaged_or_encrypted_pdf_shows_why(faults: Faults) -> None:
    before_files, before_library = files_state(faults), library_state(faults)
    expository = EXPOSITORY.read_bytes()
    uploads = {
        "random.pdf": (random_pdf(), "damaged PDF that cannot be opened"),
        "cut.pdf": (truncated_pdf(PAPERMAGE.read_bytes(), 0.5), "incomplete"),
        "locked.pdf": (
            encrypted_pdf(expository, user_password="secret", owner_password="owner"),
            "password-protected",
        ),
    }
    with admin_client(faults) as client:
        for name, (data, expected) in uploads.items():
            answer = client.post(
                "/admin/papers/paperpdf/add/",
                data={
                    "paper": str(faults.paper_id("attention")),
                    "csrfmiddlewaretoken": client.cookies["csrftoken"],
                },
                files={"upload": (name, data, "application/pdf")},
            )
            assert answer.status_code == 200, (name, answer.status_code)
            errors = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', answer.text, re.S)
            shown = " ".join(re.sub(r"<[^>]+>", " ", e) for e in errors)
            assert expected in shown, (name, shown)
            assert_clear(" ".join(shown.split()), faults)
    assert files_state(faults) == before_files
    assert library_state(faults) == before_library


# --- (c): downloads that break off, stall, trickle or are not PDFs -------------------------


async def test_broken_downloads_are_clear_errors_and_change_nothing(faults: Faults) -> None:
    before_files, before_library = files_state(faults), library_state(faults)
    cases = {
        # path -> code, reason, retryable
        "/truncated.pdf": ("pdf_download_failed", "incomplete", True),
        "/unsized.pdf": ("not_a_pdf", "truncated", None),
        "/page.html": ("not_a_pdf", "not_pdf", None),
        "/html-as.pdf": ("not_a_pdf", "not_pdf", None),
        "/stall.pdf": ("pdf_download_failed", "timeout", True),
        "/trickle.pdf": ("pdf_download_failed", "timeout", True),
        "/error500": ("pdf_download_failed", "http_error", True),
    }
    bert = faults.paper_id("bert")
    outcomes = probe(faults, "download", [(bert, faults.host.url(path)) for path in cases])
    for outcome, (path, expected) in zip(outcomes, cases.items(), strict=True):
        assert outcome["refused"], (path, outcome)
        assert (outcome["code"], outcome["reason"], outcome.get("retryable")) == expected
        assert_clear(outcome["message"], faults)
        # The stalled and trickling ones end at PDF_DOWNLOAD_TIMEOUT, not when the host
        # gives up (STALL_LIMIT) or would have finished.
        assert outcome["seconds"] < PDF_DOWNLOAD_TIMEOUT + QUICK, (path, outcome)
    assert outcomes[4]["message"] == f"The download did not finish within {PDF_DOWNLOAD_TIMEOUT} s."
    assert outcomes[6]["status"] == 500
    assert files_state(faults) == before_files
    assert library_state(faults) == before_library
    await server_answers_normally(faults)


def test_download_retried_after_a_broken_transfer_succeeds(faults: Faults) -> None:
    url = faults.host.url("/flaky-1.pdf")  # the first transfer breaks off, the next is whole
    command = manage_args("attach_pdf", faults.citekey("bert"), "--download", "--url", url)
    first = run(faults.kb.env, *command)
    assert_cli_refused(first, faults, r"closed the connection before the whole file arrived")
    assert pdf_row(faults, "bert")["sha256"] == hashlib.sha256(PAPERMAGE.read_bytes()).hexdigest()
    files_state(faults)
    # What a download killed half-way (a worker killed, a power cut) leaves behind.
    orphan = faults.kb.directory / "downloads" / ".download-orphan.part"
    orphan.write_bytes(QUANTUM.read_bytes()[:1000])
    two_hours_ago = time.time() - 7200
    os.utime(orphan, (two_hours_ago, two_hours_ago))
    second = run(faults.kb.env, *command)
    assert second.returncode == 0, second.stderr
    row = pdf_row(faults, "bert")
    assert row["sha256"] == hashlib.sha256(QUANTUM.read_bytes()).hexdigest()
    assert row["page_count"] == 8
    assert not orphan.exists()  # the next transfer cleared it
    files_state(faults)


def test_server_side_download_that_trickles_ends_in_time(faults: Faults) -> None:
    """The admin's "Fetch PDFs" runs the download in the server's request when there is no
    worker: a host that trickles must not hold that request (or the PDF) for longer than
    PDF_DOWNLOAD_TIMEOUT."""
    before_files = files_state(faults)
    attention = faults.paper_id("attention")
    query(faults, "UPDATE papers_paper SET pdf_url = ? WHERE paper_id = ?",
          (faults.host.url("/trickle.pdf"), attention))  # fmt: skip
    before_library = library_state(faults)
    with admin_client(faults) as client:
        started = time.monotonic()
        answer = client.post(
            "/admin/papers/paper/",
            data={
                "action": "download_pdfs",
                "_selected_action": str(attention),
                "index": "0",
                "csrfmiddlewaretoken": client.cookies["csrftoken"],
            },
        )
        seconds = time.monotonic() - started
        assert answer.status_code == 302, answer.text[:500]
        page = client.get(answer.headers["location"])
    assert seconds < PDF_DOWNLOAD_TIMEOUT + QUICK, seconds
    assert "1 of 1 papers have a pdf_url and are being downloaded" in page.text
    assert faults.host.requests[-1] == "/trickle.pdf"
    assert f"paper {attention}: PDF download failed: The download did not finish" in (
        faults.server.log()
    )
    assert files_state(faults) == before_files
    assert library_state(faults) == before_library


# --- (d): the stored PDF damaged on disk after it was attached ------------------------------


async def test_pdf_damaged_on_disk_is_a_clear_error_until_attached_again(faults: Faults) -> None:
    paper_id = faults.paper_id("unfiled")
    area, _ = await call(
        faults,
        "create_area_annotation",
        {"paper_id": paper_id, "page": 1, "rect": [100, 100, 300, 300], "comment": "kept"},
    )
    assert not area.is_error, area
    row = pdf_row(faults, "unfiled")
    downloads = faults.kb.directory / "downloads"
    stored, annotated = downloads / row["file_name"], downloads / row["annotated_file_name"]
    good = stored.read_bytes()
    annotated_before = annotated.read_bytes()
    before_library = library_state(faults)

    damages = {
        "random bytes": random_pdf(len(good)),
        "cut at half": truncated_pdf(good, 0.5),
        "cut near the end": truncated_pdf(good, 0.95),
        "empty": b"",
        "same size, zeroed tail": good[: len(good) // 2] + bytes(len(good) - len(good) // 2),
    }
    for damage, data in damages.items():
        stored.write_bytes(data)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("get_pdf_outline", {"paper_id": paper_id}),
            ("read_pdf_pages", {"paper_id": paper_id, "pages": "1"}),
            ("read_pdf_pages", {"paper_id": paper_id, "section": "Introduction"}),
            ("create_highlight", {"paper_id": paper_id, "page": 1, "text": "Quantum"}),
            ("create_area_annotation", {"paper_id": paper_id, "page": 1, "rect": [1, 1, 9, 9]}),
        ]
        for tool, arguments in calls:
            error = await clear_error(faults, tool, arguments, "not_a_pdf")
            assert error["reason"] == "unreadable", (damage, tool, error)
            assert "attach it again" in error["message"], error
        # What the database holds still answers.
        listed, _ = await call(faults, "list_annotations", {"paper_id": paper_id})
        assert tool_data(listed)["total"] == 1
        assert annotated.read_bytes() == annotated_before, damage
        assert library_state(faults) == before_library, damage
        files_state(faults)

    # The remedy the message names works: attaching the file again restores everything.
    done = run(faults.kb.env, *manage_args("attach_pdf", faults.citekey("unfiled"), str(QUANTUM)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Attached to paper {paper_id}: "), done.stdout
    assert stored.read_bytes() == good
    assert library_state(faults) == before_library
    outline, _ = await call(faults, "get_pdf_outline", {"paper_id": paper_id})
    assert tool_data(outline)["total_pages"] == 8
    listed, _ = await call(faults, "list_annotations", {"paper_id": paper_id})
    assert [a["comment"] for a in tool_data(listed)["annotations"]] == ["kept"]
    files_state(faults)


# --- (e)-(h): Zotero closed, hanging up, stalling, trickling, and back ---------------------


async def zotero_works(faults: Faults) -> None:
    """(h) The next calls succeed: nothing in the server is stuck on the last fault."""
    lookup, seconds = await call(faults, "zotero_lookup", {"citekey": "murray2012quantum"})
    assert not lookup.is_error, lookup
    assert tool_data(lookup)["pdf_attachment_keys"] == ["MURRAYPF"]
    pages, _ = await call(faults, "zotero_read_pdf_pages", {"key": "MURRAY12", "pages": "1"})
    assert pages.content[0].text.startswith("--- Page 1 of 8 ---\nQuantum Criticality")
    assert seconds < QUICK


READS: list[tuple[str, dict[str, Any]]] = [
    ("zotero_lookup", {"citekey": "murray2012quantum"}),
    ("zotero_get_pdf_outline", {"key": "MURRAY12"}),
    ("zotero_read_pdf_pages", {"key": "MURRAY12", "pages": "1-2"}),
]


async def test_zotero_closed_is_unreachable_at_once_and_back_when_it_is(faults: Faults) -> None:
    faults.zotero.stop()
    for tool, arguments in READS:
        error = await clear_error(faults, tool, arguments, "zotero_unreachable", limit=QUICK)
        assert error["message"].startswith(f"Zotero is not reachable at {faults.zotero.url}")
    faults.zotero.start()
    await zotero_works(faults)


async def test_zotero_hanging_up_mid_answer_is_a_clear_error(faults: Faults) -> None:
    faults.zotero.set_mode("cut")
    for tool, arguments in READS:
        error = await clear_error(faults, tool, arguments, "zotero_error", limit=QUICK)
        assert "Zotero closed the connection before its answer to /" in error["message"]
        assert error["reason"] == "connection_closed"
    faults.zotero.set_mode("normal")
    await zotero_works(faults)


async def test_zotero_write_whose_answer_is_lost_says_it_may_have_happened(
    faults: Faults,
) -> None:
    """A highlight whose answer is lost may exist in Zotero: the error says so, so the
    agent checks before it tries again (and does not annotate twice)."""
    arguments = {"key": "MURRAY12", "page": 1, "text": "Bethe", "color": "code"}
    made = len(faults.zotero.fake.annotations)
    for mode, code in (("cut", "zotero_error"), ("stall", "zotero_timeout")):
        faults.zotero.set_mode(mode, routes={"highlight"})
        error = await clear_error(
            faults, "zotero_create_highlight", arguments, code, limit=ZOTERO_TIMEOUT + QUICK
        )
        assert (
            "The highlight may have been made in Zotero all the same: check there before "
            "trying again." in error["message"]
        ), error
        assert "try again" not in error["message"].lower().replace("trying again", "")
    # It was made, both times: the fake answers after it has annotated.
    assert len(faults.zotero.fake.annotations) == made + 2


@pytest.mark.parametrize("mode", ["stall", "stall_body", "trickle"])
async def test_zotero_stalling_is_a_timeout_within_zotero_timeout(
    faults: Faults, mode: str
) -> None:
    faults.zotero.set_mode(mode)
    for tool, arguments in READS[:2]:
        error = await clear_error(faults, tool, arguments, "zotero_timeout", ZOTERO_TIMEOUT + QUICK)
        assert f"within {ZOTERO_TIMEOUT} s (ZOTERO_TIMEOUT)" in error["message"]
    faults.zotero.set_mode("normal")
    await zotero_works(faults)


def test_zotero_import_cut_off_half_way_changes_nothing_then_works(faults: Faults) -> None:
    """import_zotero asks Zotero everything before it writes: Better BibTeX hanging up on
    the attachments (after the items came) leaves the library as it was; run again with
    Zotero back, it imports."""
    before_files, before_library = files_state(faults), library_state(faults)
    command = manage_args("import_zotero", "--no-progress")
    faults.zotero.set_mode("cut", routes={"item.attachments"})
    done = run(faults.kb.env, *command)
    assert done.returncode == 2, (done.returncode, done.stderr)  # Zotero not reachable
    assert "Traceback" not in done.stderr
    message = done.stderr.strip().removeprefix("CommandError: ")
    assert_clear(message, faults)
    assert message.startswith(
        "Zotero closed the connection before its answer to item.attachments was complete"
    ), message
    methods = faults.zotero.bbt_methods
    assert "item.search" in methods and methods[-1] == "item.attachments", methods
    assert files_state(faults) == before_files
    assert library_state(faults) == before_library
    faults.zotero.set_mode("normal")
    done = run(faults.kb.env, *command)
    assert done.returncode in (0, 1), done.stderr  # 1: one item's PDF is gone from disk
    after = library_state(faults)
    assert len(after["papers"]) == len(before_library["papers"]) + 5
    files_state(faults)

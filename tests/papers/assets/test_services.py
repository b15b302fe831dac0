"""Paper assets (issue 8): names, storage, the fetch from ASSET_BASE_URL, truncation, the
import_assets command, the admin inline and the read-only tool list.

The asset host is a real local HTTP server (`AssetServer`) that serves files, and on
demand answers 404/500, hangs past the timeout, or redirects (to itself or elsewhere).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from core.errors import DomainError, InvalidInput
from papers import assets
from papers.models import Paper, PaperAsset
from tests.papers.assets.builders import (
    ATTENTION,
    BRIEF,
    DEEP_READ,
    SOURCE,
    ZH,
    AssetServer,
)

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assert_no_location(error: DomainError, *locations: str) -> None:
    """Neither the message nor any detail names a URL or a path."""
    body = json.dumps(error.as_dict())
    assert "http" not in body and "127.0.0.1" not in body
    for location in locations:
        assert location not in body


@pytest.fixture
def assets_dir(settings: Any, tmp_path: Path) -> Path:
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.ASSET_BASE_URL = ""
    return settings.ASSETS_DIR


@pytest.fixture
def paper(make_paper: Callable[..., Paper], assets_dir: Path) -> Paper:
    return make_paper("Attention Is All You Need")


@pytest.fixture
def asset_server(tmp_path: Path, settings: Any, assets_dir: Path) -> Iterator[AssetServer]:
    with AssetServer(tmp_path / "served") as server:
        settings.ASSET_BASE_URL = server.base_url
        settings.ASSET_FETCH_TIMEOUT = 0.5
        yield server


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[AssetServer]:
    with AssetServer(tmp_path / "elsewhere") as server:
        yield server


def remote_asset(paper: Paper, kind: str, name: str = "") -> PaperAsset:
    """A row saying ASSET_BASE_URL serves the asset, as asset_register_remote leaves it."""
    return PaperAsset.objects.create(paper=paper, kind=kind, name=name, storage="remote")


# --- names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["../x", "..", "/etc/passwd", "a/b", "a\\b", "a%2Fb", "..%2F..%2Fetc", "", " ", "x" * 65,
     "deep read", "résumé", ".hidden", "-x", "brief\x00", "brief\n"],
)  # fmt: skip
def test_unsafe_template_names_are_invalid_input(name: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        assets.template_name_clean(name)
    assert raised.value.details == {"field": "template"}


def test_template_names_are_lower_cased_identifiers() -> None:
    assert assets.template_name_clean("Deep_Read") == "deep_read"
    assert assets.template_name_clean("v2.brief-en") == "v2.brief-en"
    assert assets.template_name_clean("x" * 64) == "x" * 64


@pytest.mark.parametrize(
    ("code", "canonical"),
    [("zh", "zh"), ("ZH", "zh"), ("pt-br", "pt-BR"), ("zh-hans", "zh-Hans"),
     ("es-419", "es-419"), ("sr-latn-rs", "sr-Latn-RS")],
)  # fmt: skip
def test_language_codes_get_canonical_case(code: str, canonical: str) -> None:
    assert assets.language_code_clean(code) == canonical


@pytest.mark.parametrize(
    "code", ["z", "zh_CN", "../zh", "zh/../../etc", "zh%2F", "/zh", "zh-", "english-language"]
)
def test_unsafe_language_codes_are_invalid_input(code: str) -> None:
    with pytest.raises(InvalidInput):
        assets.language_code_clean(code)


def test_storage_layout_is_relative_to_the_paper() -> None:
    assert assets.asset_relative_path(paper_id=7, kind="summary", name="Brief") == (
        "7/summary/brief.json"
    )
    assert assets.asset_relative_path(paper_id=7, kind="source") == "7/source.md"
    assert assets.asset_relative_path(paper_id=7, kind="translation", name="pt-br") == (
        "7/translation/pt-BR.md"
    )


# --- saving and reading local assets -----------------------------------------------------


def test_save_summary_writes_the_layout_and_records_it(paper: Paper, assets_dir: Path) -> None:
    asset = assets.asset_save(paper=paper, kind="summary", name="brief", content=BRIEF)
    path = assets_dir / str(paper.pk) / "summary" / "brief.json"
    assert path.read_text() == BRIEF
    assert [p.name for p in path.parent.iterdir()] == ["brief.json"]  # no temporary left
    assert asset.storage == "local" and asset.content_type == "application/json"
    assert asset.size == len(BRIEF.encode())
    assert asset.sha256 == hashlib.sha256(BRIEF.encode()).hexdigest()


def test_first_summary_becomes_preferred_and_set_preferred_switches(paper: Paper) -> None:
    assets.asset_save(paper=paper, kind="summary", name="brief", content=BRIEF)
    assets.asset_save(paper=paper, kind="summary", name="deep_read", content=DEEP_READ)
    paper.refresh_from_db()
    assert paper.preferred_summary_template == "brief"
    assets.asset_save(
        paper=paper, kind="summary", name="deep_read", content=DEEP_READ, set_preferred=True
    )
    assert assets.summary_templates_info(paper_id=paper.pk) == {
        "preferred_summary_template": "deep_read",
        "available_summary_templates": ["brief", "deep_read"],
    }


def test_saving_again_replaces_the_content(paper: Paper) -> None:
    assets.asset_save(paper=paper, kind="summary", name="brief", content=BRIEF)
    assets.asset_save(paper=paper, kind="summary", name="BRIEF", content='{"tldr": "new"}')
    assert assets.summary_get(paper=paper, template="brief").text == '{"tldr": "new"}'
    assert paper.assets.count() == 1


@pytest.mark.parametrize(
    ("content", "words"),
    [("{not json", "not valid JSON"), ('"{\\"tldr\\": 1}"', "JSON object"), ("[1, 2]", "object"),
     ("   ", "empty"), (b"\xff\xfe{}", "UTF-8")],
)  # fmt: skip
def test_save_summary_rejects_what_is_not_a_json_object(
    paper: Paper, assets_dir: Path, content: str | bytes, words: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        assets.asset_save(paper=paper, kind="summary", name="brief", content=content)
    assert words in raised.value.message
    assert not paper.assets.exists()
    assert not assets_dir.exists() or not any(assets_dir.rglob("*.json"))


def test_save_rejects_content_over_asset_max_bytes(paper: Paper, settings: Any) -> None:
    settings.ASSET_MAX_BYTES = 1024
    with pytest.raises(InvalidInput, match="1024 bytes"):
        assets.asset_save(paper=paper, kind="source", content="x" * 1025)
    assert not paper.assets.exists()


def test_summary_defaults_to_the_preferred_template(paper: Paper) -> None:
    assets.asset_save(paper=paper, kind="summary", name="brief", content=BRIEF)
    assets.asset_save(paper=paper, kind="summary", name="deep_read", content=DEEP_READ)
    default = assets.summary_get(paper=paper)
    chosen = assets.summary_get(paper=paper, template="Deep_Read")
    assert (default.name, default.text) == ("brief", BRIEF)
    assert (chosen.name, chosen.text) == ("deep_read", DEEP_READ)
    assert json.loads(chosen.text)["notes"].endswith("\U0001f680")


def test_unknown_template_lists_the_available_ones(paper: Paper) -> None:
    assets.asset_save(paper=paper, kind="summary", name="brief", content=BRIEF)
    with pytest.raises(assets.TemplateNotAvailable) as raised:
        assets.summary_get(paper=paper, template="deep_read")
    assert raised.value.as_dict() == {
        "code": "template_not_available",
        "message": f"Paper {paper.pk} has no 'deep_read' summary; available templates: brief.",
        "paper_id": paper.pk,
        "template": "deep_read",
        "available_summary_templates": ["brief"],
    }


def test_paper_without_summaries_has_no_default_template(paper: Paper) -> None:
    with pytest.raises(assets.TemplateNotAvailable) as raised:
        assets.summary_get(paper=paper)
    assert raised.value.details["available_summary_templates"] == []
    assert raised.value.details["template"] is None


def test_without_preferred_a_single_summary_is_the_default_and_several_are_an_error(
    paper: Paper,
) -> None:
    assets.asset_save(paper=paper, kind="summary", name="brief", content=BRIEF)
    Paper.objects.filter(pk=paper.pk).update(preferred_summary_template="")
    paper.refresh_from_db()
    assert assets.summary_get(paper=paper).name == "brief"
    assets.asset_save(paper=paper, kind="summary", name="deep_read", content=DEEP_READ)
    Paper.objects.filter(pk=paper.pk).update(preferred_summary_template="")
    paper.refresh_from_db()
    with pytest.raises(assets.TemplateNotAvailable, match="no preferred summary template"):
        assets.summary_get(paper=paper)


def test_preferred_template_without_a_summary_is_not_available(paper: Paper) -> None:
    assets.asset_save(paper=paper, kind="summary", name="brief", content=BRIEF)
    Paper.objects.filter(pk=paper.pk).update(preferred_summary_template="gone")
    paper.refresh_from_db()
    with pytest.raises(assets.TemplateNotAvailable) as raised:
        assets.summary_get(paper=paper)
    assert raised.value.details["template"] == "gone"


def test_missing_source_and_translation_are_explicitly_not_available(paper: Paper) -> None:
    assets.asset_save(paper=paper, kind="translation", name="zh", content=ZH)
    with pytest.raises(assets.AssetNotFound) as source:
        assets.source_get(paper=paper)
    with pytest.raises(assets.AssetNotFound) as translation:
        assets.translation_get(paper=paper, lang="fr")
    assert source.value.as_dict() == {
        "code": "asset_not_found",
        "message": f"The source markdown of paper {paper.pk} is not available.",
        "paper_id": paper.pk,
        "kind": "source",
    }
    assert translation.value.details["available_translations"] == ["zh"]
    assert "not available" in translation.value.message


def test_source_and_translation_are_read_back(paper: Paper) -> None:
    assets.asset_save(paper=paper, kind="source", content=SOURCE)
    assets.asset_save(paper=paper, kind="translation", name="ZH", content=ZH.encode())
    assert assets.source_get(paper=paper).text == SOURCE
    assert assets.translation_get(paper=paper, lang="zh").text == ZH


def test_recorded_file_that_is_gone_is_a_fetch_failure_without_the_path(
    paper: Paper, assets_dir: Path
) -> None:
    assets.asset_save(paper=paper, kind="source", content=SOURCE)
    (assets_dir / str(paper.pk) / "source.md").unlink()
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.source_get(paper=paper)
    assert raised.value.details["reason"] == "not_found"
    assert_no_location(raised.value, str(assets_dir), "source.md")


def test_summary_file_that_is_not_json_is_a_parse_failure(paper: Paper, assets_dir: Path) -> None:
    assets.asset_save(paper=paper, kind="summary", name="brief", content=BRIEF)
    (assets_dir / str(paper.pk) / "summary" / "brief.json").write_text('{"tldr": ')
    with pytest.raises(assets.AssetParseFailed) as raised:
        assets.summary_get(paper=paper, template="brief")
    error = raised.value.as_dict()
    assert error["code"] == "asset_parse_failed"
    assert (error["paper_id"], error["template"]) == (paper.pk, "brief")
    assert "line 1" in error["reason"]
    assert_no_location(raised.value, str(assets_dir))


def test_source_that_is_not_utf8_is_a_parse_failure(paper: Paper, assets_dir: Path) -> None:
    assets.asset_save(paper=paper, kind="source", content=SOURCE)
    (assets_dir / str(paper.pk) / "source.md").write_bytes(b"caf\xe9")
    with pytest.raises(assets.AssetParseFailed) as raised:
        assets.source_get(paper=paper)
    assert raised.value.details["reason"] == "not_utf8"


# --- truncation --------------------------------------------------------------------------


def test_truncate_keeps_text_that_fits() -> None:
    assert assets.truncate("abc", 3) == "abc"
    assert assets.truncate("abc", None) == "abc"


def test_truncate_cuts_at_max_chars_and_says_how_much_and_how_to_get_more() -> None:
    text = "x" * 9 + "\U0001f680" + "tail" * 10
    cut = assets.truncate(text, 10, more="Call get_paper_source with max_chars=50.")
    kept, marker = cut.split("\n\n[TRUNCATED: ")
    assert kept == "x" * 9 + "\U0001f680"  # a character is never split
    assert marker == (
        "showed the first 10 of 50 characters; 40 characters were cut. "
        "Call get_paper_source with max_chars=50.]"
    )
    assert "max_chars=50" in assets.truncate(text, 10)


# --- remote assets (ASSET_BASE_URL) ------------------------------------------------------


def test_remote_summary_is_fetched_from_the_base_url(
    paper: Paper, asset_server: AssetServer
) -> None:
    asset_server.put(f"{paper.pk}/summary/deep_read.json", DEEP_READ)
    remote_asset(paper, "summary", "deep_read")
    assert assets.summary_get(paper=paper, template="deep_read").text == DEEP_READ
    assert asset_server.requests == [f"/assets/{paper.pk}/summary/deep_read.json"]


def test_remote_404_is_a_fetch_failure_without_the_url(
    paper: Paper, asset_server: AssetServer
) -> None:
    remote_asset(paper, "source")
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.source_get(paper=paper)
    assert raised.value.as_dict() == {
        "code": "asset_fetch_failed",
        "message": (
            f"Cannot fetch the source markdown of paper {paper.pk}: the asset server answered 404."
        ),
        "reason": "not_found",
        "paper_id": paper.pk,
        "kind": "source",
        "status": 404,
    }
    assert_no_location(raised.value, asset_server.base_url)


def test_remote_server_error_is_a_fetch_failure(paper: Paper, asset_server: AssetServer) -> None:
    asset_server.behaviours[f"{paper.pk}/source.md"] = ("status", 500)
    remote_asset(paper, "source")
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.source_get(paper=paper)
    assert (raised.value.details["reason"], raised.value.details["status"]) == ("http_error", 500)


def test_remote_that_hangs_times_out(paper: Paper, asset_server: AssetServer) -> None:
    asset_server.put(f"{paper.pk}/summary/brief.json", BRIEF)
    asset_server.behaviours[f"{paper.pk}/summary/brief.json"] = ("hang",)
    remote_asset(paper, "summary", "brief")
    started = time.monotonic()
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.summary_get(paper=paper, template="brief")
    assert time.monotonic() - started < 3
    assert raised.value.details["reason"] == "timeout"
    assert raised.value.details["retryable"] is True
    assert raised.value.details["template"] == "brief"
    assert_no_location(raised.value, asset_server.base_url)


def test_connection_refused_is_a_fetch_failure(
    paper: Paper, settings: Any, assets_dir: Path
) -> None:
    settings.ASSET_BASE_URL = f"http://127.0.0.1:{closed_port()}/assets"
    remote_asset(paper, "source")
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.source_get(paper=paper)
    assert raised.value.details["reason"] == "connection_failed"
    assert_no_location(raised.value)


def test_remote_asset_without_a_base_url_is_a_fetch_failure(paper: Paper) -> None:
    remote_asset(paper, "source")
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.source_get(paper=paper)
    assert raised.value.details["reason"] == "not_configured"


def test_redirect_to_another_host_is_refused(
    paper: Paper, asset_server: AssetServer, elsewhere: AssetServer
) -> None:
    elsewhere.put(f"{paper.pk}/source.md", "# attacker content")
    asset_server.behaviours[f"{paper.pk}/source.md"] = (
        "redirect",
        f"{elsewhere.base_url}/{paper.pk}/source.md",
    )
    remote_asset(paper, "source")
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.source_get(paper=paper)
    assert raised.value.details["reason"] == "redirect_refused"
    assert elsewhere.requests == []
    assert_no_location(raised.value, elsewhere.base_url)


def test_same_host_redirects_are_followed_a_few_times(
    paper: Paper, asset_server: AssetServer
) -> None:
    asset_server.put("canonical/source.md", SOURCE)
    asset_server.behaviours[f"{paper.pk}/source.md"] = ("redirect", "/assets/canonical/source.md")
    remote_asset(paper, "source")
    assert assets.source_get(paper=paper).text == SOURCE

    asset_server.behaviours[f"{paper.pk}/translation/zh.md"] = (
        "redirect",
        f"{asset_server.base_url}/{paper.pk}/translation/zh.md",
    )
    remote_asset(paper, "translation", "zh")
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.translation_get(paper=paper, lang="zh")
    assert raised.value.details["reason"] == "too_many_redirects"
    assert len(asset_server.requests) == 2 + assets.MAX_REDIRECTS + 1


def test_remote_content_over_the_size_cap_is_refused(
    paper: Paper, asset_server: AssetServer, settings: Any
) -> None:
    settings.ASSET_MAX_BYTES = 1024
    asset_server.put(f"{paper.pk}/source.md", "x" * 2000)
    remote_asset(paper, "source")
    with pytest.raises(assets.AssetFetchFailed) as raised:
        assets.source_get(paper=paper)
    assert raised.value.details["reason"] == "too_large"


def test_remote_summary_that_is_not_json_is_a_parse_failure(
    paper: Paper, asset_server: AssetServer
) -> None:
    asset_server.put(f"{paper.pk}/summary/brief.json", "<html>Not JSON</html>")
    remote_asset(paper, "summary", "brief")
    with pytest.raises(assets.AssetParseFailed):
        assets.summary_get(paper=paper, template="brief")


def test_register_remote_checks_the_asset_and_records_it(
    paper: Paper, asset_server: AssetServer
) -> None:
    asset_server.put(f"{paper.pk}/translation/pt-BR.md", "# Atenção")
    asset = assets.asset_register_remote(paper=paper, kind="translation", name="pt-br")
    assert (asset.storage, asset.name, asset.size) == ("remote", "pt-BR", len("# Atenção".encode()))
    with pytest.raises(assets.AssetFetchFailed):
        assets.asset_register_remote(paper=paper, kind="source")
    assert list(paper.assets.values_list("kind", flat=True)) == ["translation"]


# --- import_assets -----------------------------------------------------------------------


def run_import(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_assets", *args, "--no-progress", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_import_a_folder_in_the_storage_layout(
    paper: Paper, tmp_path: Path, assets_dir: Path
) -> None:
    folder = tmp_path / "export"
    shutil.copytree(ATTENTION, folder / paper.citekey)
    (folder / paper.citekey / "notes.txt").write_text("not an asset")
    out, err = run_import(str(folder))
    assert "Imported 4 assets, 0 failed." in out
    assert "notes.txt does not fit the storage layout" in err
    assert assets.summary_templates_info(paper_id=paper.pk) == {
        "preferred_summary_template": "brief",
        "available_summary_templates": ["brief", "deep_read"],
    }
    assert (assets_dir / str(paper.pk) / "translation" / "zh.md").read_text() == ZH
    assert assets.source_get(paper=paper).text == SOURCE


def test_import_folder_skips_symbolic_links(paper: Paper, tmp_path: Path, assets_dir: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("PRIVATE KEY")
    outside = tmp_path / "outside"
    (outside / "summary").mkdir(parents=True)
    (outside / "summary" / "linked.json").write_text('{"summary": "from outside"}')
    folder = tmp_path / "export"
    paper_dir = folder / paper.citekey
    (paper_dir / "summary").mkdir(parents=True)
    (paper_dir / "summary" / "brief.json").write_text('{"summary": "real"}')
    (paper_dir / "source.md").symlink_to(secret)
    (paper_dir / "translation").symlink_to(outside / "summary", target_is_directory=True)
    (folder / str(paper.pk)).symlink_to(outside, target_is_directory=True)
    out, err = run_import(str(folder))
    assert "Imported 1 asset, 0 failed." in out
    assert f"{paper_dir / 'source.md'} is a symbolic link; skipped" in err
    assert f"{paper_dir / 'translation'} is a symbolic link; skipped" in err
    assert f"{folder / str(paper.pk)} is a symbolic link; skipped" in err
    assert not (assets_dir / str(paper.pk) / "source.md").exists()
    assert "PRIVATE KEY" not in "".join(
        p.read_text(errors="replace") for p in assets_dir.rglob("*") if p.is_file()
    )


def test_import_folder_reports_failures_and_exits_1(
    paper: Paper, tmp_path: Path, assets_dir: Path
) -> None:
    folder = tmp_path / "export"
    shutil.copytree(ATTENTION / "summary", folder / str(paper.pk) / "summary")
    (folder / str(paper.pk) / "summary" / "bad.json").write_text("{nope")
    shutil.copytree(ATTENTION, folder / "nobody2020none")
    with pytest.raises(CommandError) as raised:
        run_import(str(folder))
    assert raised.value.returncode == 1
    assert "failed" in str(raised.value)
    assert assets.available_summary_templates(paper) == ["brief", "deep_read"]


def test_import_single_files_and_set_preferred(paper: Paper) -> None:
    ref = str(paper.pk)
    run_import("--paper", ref, "--summary", "brief", str(ATTENTION / "summary" / "brief.json"))
    out, _ = run_import(
        "--paper", paper.citekey, "--summary", "deep_read",
        str(ATTENTION / "summary" / "deep_read.json"), "--set-preferred",
    )  # fmt: skip
    run_import("--paper", ref, "--source", str(ATTENTION / "source.md"))
    run_import("--paper", ref, "--translation", "zh", str(ATTENTION / "translation" / "zh.md"))
    assert out.strip() == "Imported 1 asset, 0 failed."
    paper.refresh_from_db()
    assert paper.preferred_summary_template == "deep_read"
    assert sorted(paper.assets.values_list("kind", "name")) == [
        ("source", ""), ("summary", "brief"), ("summary", "deep_read"), ("translation", "zh"),
    ]  # fmt: skip


def test_import_remote_asset(paper: Paper, asset_server: AssetServer) -> None:
    asset_server.put(f"{paper.pk}/summary/brief.json", BRIEF)
    run_import("--paper", str(paper.pk), "--remote", "--summary", "brief")
    assert paper.assets.get().storage == "remote"
    with pytest.raises(CommandError) as raised:
        run_import("--paper", str(paper.pk), "--remote", "--source")
    assert raised.value.returncode == 1


@pytest.mark.parametrize(
    "args",
    [(), ("--summary", "brief", "x.json"), ("--paper", "1", "x.json"),
     ("--paper", "1", "--source", "missing.md"), ("--paper", "1", "--source", "--set-preferred",
     "x.md"), ("--paper", "1", "--remote", "--source", "x.md"), ("empty-folder",)],
)  # fmt: skip
def test_import_bad_arguments_exit_2(
    paper: Paper, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.json").write_text(BRIEF)
    (tmp_path / "x.md").write_text(SOURCE)
    (tmp_path / "empty-folder").mkdir()
    with pytest.raises(CommandError) as raised:
        run_import(*args)
    assert raised.value.returncode == 2


def test_import_with_an_unsafe_template_name_fails(paper: Paper, assets_dir: Path) -> None:
    with pytest.raises(CommandError):
        run_import("--paper", str(paper.pk), "--summary", "../../x", str(ATTENTION / "source.md"))
    assert not paper.assets.exists()
    assert not (assets_dir.parent / "x.json").exists()


# --- admin and registry ------------------------------------------------------------------


def test_admin_shows_assets_read_only_and_the_preferred_template(
    admin_client: Client, paper: Paper
) -> None:
    assets.asset_save(paper=paper, kind="summary", name="deep_read", content=DEEP_READ)
    response = admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "assets (summaries, source, translations)" in page.lower()
    assert "deep_read" in page
    assert 'name="preferred_summary_template"' in page
    assert 'name="assets-0-name"' not in page  # shown, not editable


def test_read_only_registry_hides_save_paper_summary() -> None:
    from mcp_endpoint.registry import build_server

    def names(read_only: bool) -> set[str]:
        server = build_server(toolsets=["assets"], read_only=read_only, require_collection=False)
        return {tool.name for tool in asyncio.run(server.list_tools())}

    assets = {"get_paper_summary", "get_paper_source", "save_paper_summary"}
    assert names(False) & (assets | {"save_paper_summary"}) == assets
    assert names(True) & assets == {"get_paper_summary", "get_paper_source"}

"""export_papers / render_export in every format, safe file names, atomic writes, and the
export_library command."""

# ruff: noqa: F811  (the imported fixtures are parameters of the tests below)
from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import bibtexparser
import pytest
from django.core.management import CommandError, call_command

from core.errors import InvalidInput, StorageFull
from papers.exports import FORMATS, export_papers, export_search_results, render_export
from papers.management.commands.export_library import Command as ExportLibrary
from papers.models import Paper
from papers.selectors import papers_filter, with_relations
from papers.services import paper_keywords_update
from projects.models import Project
from projects.services import project_add_papers
from tests.papers.builders import exports_dir  # noqa: F401

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    # The streams go to the instance: call_command(stdout=...) would set the --stdout flag.
    command = ExportLibrary(stdout=out, stderr=err)
    try:
        call_command(command, *args)
    except CommandError as error:
        return error.returncode, out.getvalue(), str(error)
    return 0, out.getvalue(), err.getvalue()


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def library(make_paper: Callable[..., Paper], make_project: Callable[..., Project]) -> list[Paper]:
    attention = make_paper(
        "Attention Is All You Need",
        authors=["Ashish Vaswani", "Noam Shazeer"],
        year=2017,
        venue="Advances in Neural Information Processing Systems",
        entry_type="inproceedings",
        arxiv_id="1706.03762",
        abstract='Transformers, "attention", and more;\nsecond line.',
    )
    formula = make_paper(
        '=HYPERLINK("http://evil.example") and other spreadsheet tricks',
        authors=["José García-Peñalvo"],
        year=2021,
        venue="Journal of R&D",
        doi="10.1000/xyz_1",
        pages="1--10",
    )
    bert = make_paper(
        "BERT: Pre-training of Deep Bidirectional Transformers",
        authors=["Jacob Devlin", "Ming-Wei Chang"],
        year=2019,
        doi="10.18653/v1/N19-1423",
    )
    paper_keywords_update(refs=[attention.pk, bert.pk], action="add", keywords=["transformers"])
    project = make_project("Transformers")
    project_add_papers(project=project.id, paper_ids=[attention.pk, bert.pk])
    return [attention, formula, bert]


def everything() -> list[Paper]:
    return list(papers_filter())


# --- formats ----------------------------------------------------------------------------


def test_csv_export_has_one_row_per_paper_with_authors_joined(library: list[Paper]) -> None:
    rows = list(csv.DictReader(io.StringIO(render_export(everything(), "csv"))))
    assert [row["citekey"] for row in rows] == [p.citekey for p in library]
    attention, formula, bert = rows
    assert attention["authors"] == "Ashish Vaswani; Noam Shazeer"
    assert attention["venue"] == "Advances in Neural Information Processing Systems"
    assert attention["arxiv_id"] == "1706.03762"
    assert attention["keywords"] == "transformers"
    assert attention["abstract"] == 'Transformers, "attention", and more; second line.'
    assert (attention["year"], attention["id"]) == ("2017", library[0].human_id)
    assert formula["doi"] == "10.1000/xyz_1"
    # A title Excel would run as a formula is neutralised with a leading quote.
    assert formula["title"].startswith("'=HYPERLINK(")
    assert bert["title"] == "BERT: Pre-training of Deep Bidirectional Transformers"
    assert (attention["pmid"], attention["pmcid"], attention["openreview"]) == ("", "", "")


def test_exports_show_pubmed_pmc_and_openreview_ids(make_paper: Callable[..., Paper]) -> None:
    make_paper(
        "A PubMed paper",
        identifiers={"pmid": "31452104", "pmcid": "PMC6739224", "openreview": "YicbFdNTTy"},
    )
    papers = list(with_relations(Paper.objects.all()))
    (row,) = csv.DictReader(io.StringIO(render_export(papers, "csv")))
    assert (row["pmid"], row["pmcid"], row["openreview"]) == (
        "31452104",
        "PMC6739224",
        "YicbFdNTTy",
    )
    (record,) = json.loads(render_export(papers, "json"))
    assert record["identifiers"] == {
        "pmid": "31452104",
        "pmcid": "PMC6739224",
        "openreview": "YicbFdNTTy",
    }
    markdown = render_export(papers, "markdown")
    assert "[PMID:31452104](https://pubmed.ncbi.nlm.nih.gov/31452104/)" in markdown
    assert "[PMC6739224](https://pmc.ncbi.nlm.nih.gov/articles/PMC6739224/)" in markdown
    (item,) = json.loads(render_export(papers, "csl-json"))
    assert (item["PMID"], item["PMCID"]) == ("31452104", "PMC6739224")


def test_json_export_is_the_full_record_of_each_paper(library: list[Paper]) -> None:
    records = json.loads(render_export(everything(), "json"))
    assert [r["paper_id"] for r in records] == [p.pk for p in library]
    assert records[0]["authors"] == ["Ashish Vaswani", "Noam Shazeer"]
    assert records[0]["projects"] == [Project.objects.get(name="Transformers").id]
    assert records[1]["authors_detail"][0]["family_name"] == "García-Peñalvo"
    assert records[2]["doi"] == "10.18653/v1/n19-1423"


def test_jsonl_export_is_one_record_per_line(library: list[Paper]) -> None:
    lines = render_export(everything(), "jsonl").splitlines()
    assert len(lines) == 3
    assert [json.loads(line)["citekey"] for line in lines] == [p.citekey for p in library]
    assert "García-Peñalvo" in lines[1]  # UTF-8, not \\u escapes


def test_markdown_export_lists_papers_readably(library: list[Paper]) -> None:
    text = render_export(everything(), "markdown")
    assert text.startswith("# Papers (3)\n")
    assert "1. **Attention Is All You Need**" in text
    assert "Ashish Vaswani, Noam Shazeer (2017, Advances in Neural Information" in text
    assert "[arXiv:1706.03762](https://arxiv.org/abs/1706.03762)" in text
    assert "[doi:10.1000/xyz\\_1](https://doi.org/10.1000/xyz_1)" in text
    assert f"`{library[2].citekey}`" in text


def test_bibtex_export_parses_back(library: list[Paper]) -> None:
    parsed = bibtexparser.parse_string(render_export(everything(), "bibtex"))
    assert not parsed.failed_blocks
    entries = {e.key: e for e in parsed.entries}
    attention = entries[library[0].citekey]
    assert attention.entry_type == "inproceedings"
    assert attention["title"] == "{Attention} {Is} {All} {You} {Need}"  # case kept in any style
    assert attention["booktitle"] == "Advances in Neural Information Processing Systems"
    assert attention["author"] == "Vaswani, Ashish and Shazeer, Noam"
    assert (attention["eprint"], attention["archiveprefix"]) == ("1706.03762", "arXiv")
    assert entries[library[1].citekey]["journal"] == "Journal of R\\&D"
    assert entries[library[1].citekey]["pages"] == "1--10"


def test_render_export_refuses_unknown_formats_and_empty_selections(library: list[Paper]) -> None:
    with pytest.raises(InvalidInput, match="bibtex, csv, json, jsonl, markdown"):
        render_export(everything(), "docx")
    with pytest.raises(InvalidInput, match="empty"):
        render_export([], "csv")


# --- files ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_papers_writes_into_the_exports_folder(
    library: list[Paper], exports_dir: Path, fmt: str
) -> None:
    result = export_papers(papers=everything(), fmt=fmt, filename="my refs_2024.v2")
    extensions = {"bibtex": "bib", "markdown": "md", "csl-json": "json", "bibliography": "txt"}
    extension = extensions.get(fmt, fmt)
    assert result.path == exports_dir / f"my refs_2024.v2.{extension}"
    assert (result.filename, result.count, result.format) == (result.path.name, 3, fmt)
    assert result.path.read_bytes().decode("utf-8") == render_export(everything(), fmt)
    assert files_under(exports_dir) == {result.path}


def test_a_name_with_the_extension_is_not_doubled(library: list[Paper], exports_dir: Path) -> None:
    assert export_papers(papers=everything(), fmt="bibtex", filename="refs.bib").filename == (
        "refs.bib"
    )


def test_default_names_never_replace_an_earlier_export(
    library: list[Paper], exports_dir: Path
) -> None:
    first = export_papers(papers=everything(), fmt="csv")
    second = export_papers(papers=everything(), fmt="csv")
    assert first.filename.startswith("export-") and first.filename.endswith(".csv")
    assert first.path != second.path
    assert files_under(exports_dir) == {first.path, second.path}


def test_a_chosen_name_is_never_overwritten_unless_asked(
    library: list[Paper], exports_dir: Path
) -> None:
    first = export_papers(papers=everything(), fmt="json", filename="refs")
    second = export_papers(papers=everything()[:1], fmt="json", filename="refs.json")
    third = export_papers(papers=everything()[:2], fmt="json", filename="refs")
    assert [r.filename for r in (first, second, third)] == [
        "refs.json",
        "refs-2.json",
        "refs-3.json",
    ]
    assert len(json.loads(first.path.read_text(encoding="utf-8"))) == 3  # untouched
    replaced = export_papers(papers=everything()[:1], fmt="json", filename="refs", overwrite=True)
    assert replaced.path == first.path
    assert len(json.loads(first.path.read_text(encoding="utf-8"))) == 1
    assert files_under(exports_dir) == {first.path, second.path, third.path}


@pytest.mark.parametrize(
    "name",
    ["../x", "/etc/passwd", "a/b", "a\\b", ".hidden", "x\x00y", "tab\there", "..", "x" * 101,
     "", "   ", "con", "NUL.txt", "trailing.", "semi;colon", "star*", "q?", "new\nline"],
)  # fmt: skip
def test_unsafe_file_names_are_refused(
    library: list[Paper], exports_dir: Path, tmp_path: Path, name: str
) -> None:
    before = files_under(tmp_path)
    with pytest.raises(InvalidInput) as error:
        export_papers(papers=everything(), fmt="csv", filename=name)
    assert error.value.details == {"field": "filename"}
    assert files_under(tmp_path) == before
    assert not Path("/etc/passwd.csv").exists()


def test_a_failed_write_leaves_no_file_behind(
    library: list[Paper], exports_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = export_papers(papers=everything(), fmt="bibtex", filename="refs")
    old_content = kept.path.read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(StorageFull, match="No space left") as raised:
        export_papers(papers=everything()[:1], fmt="bibtex", filename="refs")
    assert raised.value.code == "disk_full" and raised.value.details == {"folder": "exports"}
    assert str(exports_dir) not in raised.value.message  # a client may see it
    with pytest.raises(StorageFull, match="No space left"):
        export_papers(papers=everything(), fmt="csv", filename="new")
    assert files_under(exports_dir) == {kept.path}  # no temp files, no half 'new.csv'
    assert kept.path.read_bytes() == old_content


def test_export_papers_reads_the_exports_folder_at_call_time(
    library: list[Paper], settings: object, tmp_path: Path
) -> None:
    for name in ("one", "two"):
        settings.EXPORTS_DIR = tmp_path / name  # type: ignore[attr-defined]
        assert export_papers(papers=everything(), fmt="csv").path.parent == tmp_path / name


# --- export_library ---------------------------------------------------------------------


def test_export_library_writes_a_file_and_says_where(
    library: list[Paper], exports_dir: Path
) -> None:
    code, out, _ = run("--format", "bibtex", "--output", "all")
    assert code == 0
    assert out.strip() == f"Exported 3 papers as bibtex to {exports_dir / 'all.bib'}"
    assert len(bibtexparser.parse_file(str(exports_dir / "all.bib")).entries) == 3


def test_export_library_selects_by_project_and_ids(library: list[Paper], exports_dir: Path) -> None:
    attention, formula, bert = library
    code, out, _ = run("--format", "jsonl", "--project", "transformers", "--stdout")
    assert code == 0
    assert [json.loads(line)["paper_id"] for line in out.splitlines()] == [attention.pk, bert.pk]
    # ids mix paper_ids, citekeys and human ids (whose commas do not split them)
    code, out, _ = run(
        "--format",
        "jsonl",
        "--stdout",
        "--ids",
        f"{bert.pk}, {formula.citekey},{attention.human_id}",
    )
    assert code == 0
    assert sorted(json.loads(line)["paper_id"] for line in out.splitlines()) == sorted(
        p.pk for p in library
    )
    assert not exports_dir.exists() or not files_under(exports_dir)  # --stdout writes no file


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "docx"], "Unknown export format 'docx'"),
        (["--format", "csv", "--project", "nope"], "No project 'nope'"),
        (["--format", "csv", "--ids", "{first},missing2020key"], "No paper 'missing2020key'"),
        (["--format", "csv", "--ids", " , "], "--ids names no papers"),
        (["--format", "csv", "--output", "../escape"], "without folders"),
    ],
)
def test_export_library_bad_arguments_are_exit_2(
    library: list[Paper], exports_dir: Path, args: list[str], message: str
) -> None:
    code, _, err = run(*(arg.format(first=library[0].pk) for arg in args))
    assert code == 2
    assert message in err
    assert not exports_dir.exists() or not files_under(exports_dir)


def test_export_library_of_an_empty_library_is_exit_2(exports_dir: Path, db: None) -> None:
    code, _, err = run("--format", "csv")
    assert code == 2
    assert "selection is empty" in err


def test_jsonl_export_of_an_acl_paper_imports_back(
    make_paper: Callable[..., Paper], tmp_path: Path
) -> None:
    paper = make_paper(
        "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
        authors=["Jacob Devlin"],
        year=2019,
        source_url="https://aclanthology.org/N19-1423/",
        identifiers={"acl": "N19-1423"},
        preferred_citekey="devlin-etal-2019-bert",
    )
    path = tmp_path / "acl.jsonl"
    path.write_text(render_export(papers_filter(), "jsonl"), encoding="utf-8")
    Paper.objects.all().delete()
    call_command("import_jsonl", str(path), "--no-progress", stdout=io.StringIO())
    again = Paper.objects.get()
    assert again.citekey == paper.citekey
    assert dict(again.identifiers.values_list("scheme", "value")) == {"acl": "N19-1423"}


# --- export_search_results: inline or a file, whole projects (issue 18, item 5) ----------------


def test_a_small_export_is_returned_inline_and_writes_nothing(
    library: list[Paper], exports_dir: Path
) -> None:
    result = export_search_results(fmt="bibtex", refs=[library[0].citekey, library[2].pk])
    assert result["success"] is True and result["count"] == 2 and result["format"] == "bibtex"
    assert result["content"].startswith("@") and library[2].citekey in result["content"]
    assert result["size"] == len(result["content"].encode("utf-8"))
    assert "path" not in result
    assert not exports_dir.exists() or files_under(exports_dir) == set()


def test_a_whole_project_is_exported_without_listing_its_papers(library: list[Paper]) -> None:
    result = export_search_results(fmt="json", project="Transformers")
    titles = {record["title"] for record in json.loads(result["content"])}
    assert titles == {library[0].title, library[2].title} and result["count"] == 2
    # The listed papers that are in the project only.
    both = export_search_results(fmt="json", project="transformers", refs=[library[0].pk])
    assert both["count"] == 1
    with pytest.raises(InvalidInput, match="project_id"):
        export_search_results(fmt="json")


def test_an_export_over_the_inline_size_goes_to_a_file(
    library: list[Paper], exports_dir: Path, settings: object
) -> None:
    settings.EXPORT_INLINE_MAX_BYTES = 200  # type: ignore[attr-defined]
    settings.RESEARCH_DIRECTORY = exports_dir.parent  # type: ignore[attr-defined]
    result = export_search_results(fmt="markdown", project="Transformers")
    assert "content" not in result
    assert result["path"].startswith("exports/export-") and result["path"].endswith(".md")
    written = exports_dir / result["filename"]
    assert written.read_text(encoding="utf-8").startswith("# Papers (2)")
    assert result["size"] == written.stat().st_size > 200
    # A name given: written, and inline too when small; never over the earlier file.
    settings.EXPORT_INLINE_MAX_BYTES = 100_000  # type: ignore[attr-defined]
    named = export_search_results(fmt="bibtex", project="Transformers", filename="survey")
    again = export_search_results(fmt="bibtex", refs=[library[1].pk], filename="survey")
    assert (named["filename"], again["filename"]) == ("survey.bib", "survey-2.bib")
    assert named["content"] == (exports_dir / "survey.bib").read_text(encoding="utf-8")
    assert (exports_dir / "survey.bib").read_text(encoding="utf-8") == named["content"]


def test_markdown_links_only_web_urls_and_escapes_markup(
    make_paper: Callable[..., Paper],
) -> None:
    hostile = make_paper(
        "Click [here](javascript:alert(1)) <script>x</script>\n# Heading",
        authors=["Eve <img src=x onerror=alert(1)>"],
        source_url="javascript:alert(document.cookie)",
    )
    data = make_paper("Data URL", source_url="data:text/html,<b>x</b>", authors=["Ann Data"])
    web = make_paper("A Web Page", source_url="https://example.org/p?a=1&b=2", authors=["W"])
    text = render_export(papers_filter(refs=[hostile.pk, data.pk, web.pk]), "markdown")
    assert "cookie" not in text  # the javascript: source_url is not shown at all
    assert "<javascript" not in text and "<data:" not in text
    assert re.search(r"(?<!\\)\]\(javascript", text) is None  # the title's link is escaped
    assert re.search(r"(?<!\\)<(script|img)", text) is None  # only escaped, as text
    assert "\\[here\\]" in text and "\\<script\\>" in text
    assert "\n# Heading" not in text  # the newline cannot start a heading
    assert "<https://example.org/p?a=1&b=2>" in text


def test_export_library_no_abstracts_leaves_them_out_in_every_format(library: list[Paper]) -> None:
    code, full, _ = run("--format", "bibtex", "--stdout", "--no-progress")
    assert code == 0 and "abstract = {" in full
    for fmt in FORMATS:
        code, out, _ = run("--format", fmt, "--stdout", "--no-progress", "--no-abstracts")
        assert code == 0 and "Transformers, " not in out, fmt
    assert Paper.objects.get(title__startswith="Attention").abstract  # nothing is changed

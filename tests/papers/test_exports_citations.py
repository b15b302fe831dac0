"""The `bibliography` (any CSL style) and `csl-json` export formats: render_export,
export_search_results and the export_library command."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from core.errors import InvalidInput
from papers.exports import export_search_results, render_export
from papers.management.commands.export_library import Command as ExportLibrary
from papers.models import Paper
from papers.selectors import papers_filter
from tests.papers.citations.builders import MINIMAL_CSL

pytestmark = pytest.mark.django_db

APA_TRANSFORMER = (
    "Vaswani, A., & Shazeer, N. (2017). Attention is all you need. Advances in Neural "
    "Information Processing Systems, 30, 5998–6008. https://doi.org/10.5555/3295222.3295349\n"
)
APA_BERT = (
    "Devlin, J., & Chang, M.-W. (2019). BERT: Pre-training of deep bidirectional "
    "transformers. NAACL, 4171–4186.\n"
)


@pytest.fixture
def exports_dir(settings: Any, tmp_path: Path) -> Path:
    settings.EXPORTS_DIR = tmp_path / "exports"
    return Path(settings.EXPORTS_DIR)


@pytest.fixture
def two(make_paper: Callable[..., Paper]) -> list[Paper]:
    return [
        make_paper(
            "BERT: Pre-training of deep bidirectional transformers",
            authors=["Jacob Devlin", "Ming-Wei Chang"], year=2019, venue="NAACL",
            entry_type="inproceedings", pages="4171-4186",
        ),
        make_paper(
            "Attention is all you need", venue="Advances in Neural Information Processing Systems",
            volume="30", pages="5998--6008", doi="10.5555/3295222.3295349",
        ),
    ]  # fmt: skip


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    command = ExportLibrary(stdout=out, stderr=err)
    try:
        call_command(command, *args)
    except CommandError as error:
        return error.returncode, out.getvalue(), str(error)
    return 0, out.getvalue(), err.getvalue()


def test_the_bibliography_format_is_apa_by_default_in_the_styles_order(
    two: list[Paper],
) -> None:
    text = render_export(papers_filter(refs=[p.pk for p in two]), "bibliography")
    assert text == APA_BERT + APA_TRANSFORMER  # Devlin before Vaswani


def test_the_bibliography_takes_a_style_and_a_locale(two: list[Paper]) -> None:
    papers = papers_filter(refs=[p.pk for p in two])
    ieee = render_export(papers, "bibliography", style="ieee").splitlines()
    assert ieee[0].startswith("[1] J. Devlin and M.-W. Chang, “BERT: Pre-training")
    assert ieee[1].startswith("[2] A. Vaswani and N. Shazeer, “Attention is all you need,”")
    british = render_export(papers, "bibliography", style="ieee", locale="en-GB")
    assert "‘Attention is all you need’," in british


def test_a_style_for_another_format_or_an_unknown_style_is_refused(two: list[Paper]) -> None:
    papers = papers_filter(refs=[p.pk for p in two])
    with pytest.raises(InvalidInput, match="bibliography format only"):
        render_export(papers, "bibtex", style="apa")
    with pytest.raises(InvalidInput, match="Unknown citation style"):
        render_export(papers, "bibliography", style="apa-8th-edition")


def test_csl_json_is_an_array_of_items_keyed_by_citekey(two: list[Paper]) -> None:
    items = json.loads(render_export(papers_filter(refs=[p.pk for p in two]), "csl-json"))
    assert [item["id"] for item in items] == [p.citekey for p in two]
    bert = items[0]
    assert bert["type"] == "paper-conference"
    assert bert["author"] == [
        {"family": "Devlin", "given": "Jacob"},
        {"family": "Chang", "given": "Ming-Wei"},
    ]
    assert bert["issued"] == {"date-parts": [[2019]]}
    assert bert["page"] == "4171-4186"


def test_export_search_results_returns_a_bibliography_inline(
    two: list[Paper], exports_dir: Path
) -> None:
    result = export_search_results(fmt="bibliography", refs=[two[1].citekey], style="apa")
    assert result["content"] == APA_TRANSFORMER
    assert result["format"] == "bibliography"
    assert not exports_dir.exists()  # inline: nothing written


def test_export_search_results_writes_csl_json_to_a_file(
    two: list[Paper], exports_dir: Path
) -> None:
    result = export_search_results(fmt="csl-json", refs=[p.pk for p in two], filename="refs")
    assert result["filename"] == "refs.json"
    written = json.loads((exports_dir / "refs.json").read_text(encoding="utf-8"))
    assert len(written) == 2


def test_export_library_prints_a_bibliography_in_a_style(two: list[Paper]) -> None:
    code, out, _ = run("--format", "bibliography", "--style", "apa", "--stdout")
    assert code == 0
    assert out == APA_BERT + APA_TRANSFORMER


def test_export_library_reads_a_csl_file_and_writes_a_txt(
    two: list[Paper], exports_dir: Path, tmp_path: Path
) -> None:
    style = tmp_path / "minimal.csl"
    style.write_text(MINIMAL_CSL, encoding="utf-8")
    code, out, _ = run("--format", "bibliography", "--style", str(style), "--output", "refs")
    assert code == 0, out
    assert (exports_dir / "refs.txt").read_text(encoding="utf-8") == (
        "BERT: PRE-TRAINING OF DEEP BIDIRECTIONAL TRANSFORMERS\nATTENTION IS ALL YOU NEED\n"
    )


def test_export_library_bad_styles_are_exit_2(two: list[Paper], tmp_path: Path) -> None:
    code, _, message = run("--format", "bibliography", "--style", "apaa", "--stdout")
    assert code == 2
    assert "apa" in message
    code, _, message = run("--format", "bibliography", "--style", str(tmp_path / "no.csl"))
    assert code == 2
    assert "Cannot read the style" in message
    code, _, message = run("--format", "csv", "--style", "apa", "--stdout")
    assert code == 2

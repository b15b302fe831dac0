"""export_search_results(write=False): what a read-only server's export tool relies on.
Nothing is written; small exports come back inline, large ones and file names are refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from core.errors import InvalidInput
from papers.exports import export_search_results
from papers.models import Paper
from tests.papers.builders import exports_dir  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def papers(make_paper: Callable[..., Paper]) -> list[Paper]:
    return [
        make_paper("Attention Is All You Need", authors=["Ashish Vaswani"], year=2017),
        make_paper("Deep Residual Learning", authors=["Kaiming He"], year=2016),
    ]


def test_small_export_comes_back_inline_and_writes_nothing(
    papers: list[Paper],
    exports_dir: Path,  # noqa: F811
) -> None:
    result = export_search_results(
        fmt="bibtex", refs=[p.pk for p in papers], inline_max_bytes=20_000, write=False
    )
    assert result["count"] == 2
    assert "vaswani2017attention" in result["content"]
    assert "path" not in result
    assert not exports_dir.exists() or not any(exports_dir.iterdir())


def test_filename_is_refused_before_anything_is_written(
    papers: list[Paper],
    exports_dir: Path,  # noqa: F811
) -> None:
    with pytest.raises(InvalidInput) as raised:
        export_search_results(fmt="csv", refs=[papers[0].pk], filename="mine", write=False)
    assert raised.value.details["field"] == "filename"
    assert "read-only" in str(raised.value)
    assert not exports_dir.exists() or not any(exports_dir.iterdir())


def test_too_large_for_inline_is_refused_with_its_size(
    papers: list[Paper],
    exports_dir: Path,  # noqa: F811
) -> None:
    with pytest.raises(InvalidInput) as raised:
        export_search_results(
            fmt="json", refs=[p.pk for p in papers], inline_max_bytes=10, write=False
        )
    assert raised.value.details["field"] == "paper_ids"
    assert "up to 10 bytes" in str(raised.value)
    assert not exports_dir.exists() or not any(exports_dir.iterdir())


def test_a_selection_is_still_required(papers: list[Paper]) -> None:
    with pytest.raises(InvalidInput) as raised:
        export_search_results(fmt="json", write=False)
    assert raised.value.details["field"] == "paper_ids"

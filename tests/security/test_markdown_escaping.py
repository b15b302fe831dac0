"""Markdown built from other people's words (titles, abstracts, annotation comments) reaches
an agent as text: no raw HTML, emphasis, link or image comes out of it (issue 19, part D)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from core.markdown import escape_markdown, http_link
from papers.models import Annotation, Paper
from papers.pdf.selectors import _annotations_markdown
from papers.search.filters import lead_snippet
from papers.search.snippets import Highlighter

HOSTILE = (
    '<script>alert(1)</script> <img src=x onerror="alert(2)"> '
    "[click](javascript:alert(3)) ![i](http://evil.example/x.png) **bold** `code` \\*"
)


def assert_inert(markdown: str) -> None:
    assert "<script" not in markdown and "<img" not in markdown
    assert not re.search(r"(?<!\\)\]\(", markdown), markdown  # no link or image
    assert "**bold**" not in markdown and "`code`" not in markdown


def test_escape_markdown_leaves_no_markup() -> None:
    escaped = escape_markdown(HOSTILE)
    assert_inert(escaped)
    assert "&lt;script&gt;" in escaped
    assert "\\[click\\](javascript:alert(3))" in escaped
    assert escaped.endswith("\\\\\\*")  # the backslash cannot undo the escape


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>",
        "file:///etc/passwd",
        "//evil.example/x",
        "http://a.example/x y",
        "https://a.example/<x>",
        "http:///nohost",
        "",
        None,
    ],
)
def test_only_http_links_are_emitted(url: str | None) -> None:
    assert http_link(url) is None


def test_http_link_keeps_plain_http_urls() -> None:
    assert http_link("https://aclanthology.org/P19-1001") == "<https://aclanthology.org/P19-1001>"


def test_snippet_passages_escape_the_papers_text() -> None:
    passage = Highlighter(["alert"]).passage(HOSTILE)
    assert "**alert**" in passage  # the query words are still in bold
    assert_inert(passage.replace("**alert**", ""))


def test_lead_snippet_escapes_the_abstract() -> None:
    assert_inert(lead_snippet(Paper(title="t", abstract=HOSTILE)))
    long = lead_snippet(Paper(title="t", abstract=HOSTILE * 10))
    assert long.endswith(" …")
    assert_inert(long)


def test_annotation_markdown_escapes_title_text_and_comments(
    make_paper: Callable[..., Paper],
) -> None:
    paper = make_paper(title="Attention <script>x</script> [a](javascript:y)")
    annotations = [
        Annotation(
            pk=1, paper=paper, page=1, kind=Annotation.Kind.HIGHLIGHT, text=HOSTILE,
            comment=HOSTILE, color="#ffff00", rects=[[0, 0, 1, 1]],
        ),
        Annotation(
            pk=2, paper=paper, page=2, kind=Annotation.Kind.AREA, text="line one\n# heading",
            comment="", color="#ff0000", rects=[[0, 0, 1, 1]],
        ),
    ]  # fmt: skip
    markdown = _annotations_markdown(paper, annotations)
    assert_inert(markdown)
    assert "\n# heading" not in markdown  # a comment cannot start a block of its own
    assert "Comment: &lt;script&gt;" in markdown

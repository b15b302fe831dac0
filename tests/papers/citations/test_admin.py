"""The Cite box on a paper's admin page: a style select, the formatted reference (HTML and
text to copy) and the in-text citation, BibTeX and RIS entries, and the JSON its script
switches style with, through Django's test client."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from papers.models import Paper
from projects.citations import citations_for_project

pytestmark = pytest.mark.django_db


def cite_box(page: str) -> str:
    match = re.search(
        r'<fieldset class="module aligned" id="cite-box"[^>]*>.*?</fieldset>', page, re.S
    )
    assert match, "no Cite box on the page"
    return match.group(0)


@pytest.fixture
def paper(make_paper: Callable[..., Paper]) -> Paper:
    return make_paper(
        "Attention is all you need", venue="Advances in Neural Information Processing Systems",
        volume="30", pages="5998--6008", doi="10.5555/3295222.3295349",
    )  # fmt: skip


def test_the_paper_page_cites_the_paper_in_apa_by_default(
    admin_client: Client, paper: Paper
) -> None:
    response = admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
    assert response.status_code == 200
    box = cite_box(response.content.decode())
    assert '<option value="apa" selected>APA 7th edition</option>' in box
    for style in ("chicago-author-date", "ieee", "vancouver", "harvard-cite-them-right"):
        assert f'<option value="{style}">' in box
    reference = (
        "Vaswani, A., &amp; Shazeer, N. (2017). Attention is all you need. Advances in Neural "
        "Information Processing Systems, 30, 5998–6008. https://doi.org/10.5555/3295222.3295349"
    )
    assert f'readonly rows="3" cols="80">{reference}</textarea>' in box
    assert "<i>Advances in Neural Information Processing Systems</i>, <i>30</i>, 5998–6008." in box
    assert 'value="(Vaswani &amp; Shazeer, 2017)"' in box


def test_the_style_select_chooses_another_style(admin_client: Client, paper: Paper) -> None:
    url = reverse("admin:papers_paper_change", args=[paper.pk])
    box = cite_box(admin_client.get(url, {"cite_style": "ieee"}).content.decode())
    assert '<option value="ieee" selected>IEEE</option>' in box
    assert html.escape("[1] A. Vaswani and N. Shazeer, “Attention is all you need,”") in box
    assert 'value="[1]"' in box
    # A style outside the list falls back to APA rather than failing the page.
    box = cite_box(admin_client.get(url, {"cite_style": "../etc"}).content.decode())
    assert '<option value="apa" selected>' in box


def test_the_box_controls_are_never_submitted_with_the_form(
    admin_client: Client, paper: Paper
) -> None:
    box = cite_box(admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
                   .content.decode())  # fmt: skip
    assert " name=" not in box


def test_titles_are_escaped_in_the_box(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    hostile = make_paper("<img src=x onerror=alert(1)> study", authors=["Eve Evans"])
    page = admin_client.get(reverse("admin:papers_paper_change", args=[hostile.pk]))
    box = cite_box(page.content.decode())
    assert "<img" not in box
    assert "&lt;img src=x onerror=alert(1)&gt; study" in box


def test_readers_see_the_box_on_the_view_only_page(client: Client, paper: Paper) -> None:
    reader = User.objects.create_user("reader", password="pw", is_staff=True)
    reader.groups.add(Group.objects.get(name="Readers"))
    client.force_login(reader)
    response = client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
    assert response.status_code == 200
    assert "(Vaswani &amp; Shazeer, 2017)" in cite_box(response.content.decode())


def cite_json(client: Client, paper: Paper, style: str) -> tuple[int, dict[str, Any]]:
    response = client.get(reverse("admin:papers_paper_cite", args=[paper.pk]), {"style": style})
    return response.status_code, response.json()


def test_the_box_json_switches_style_through_the_same_formatter(
    admin_client: Client, paper: Paper
) -> None:
    status, cite = cite_json(admin_client, paper, "ieee")
    assert status == 200
    assert cite["style"] == "ieee" and cite["kind"] == "csl" and cite["label"] == "IEEE"
    assert cite["reference"].startswith("[1] A. Vaswani and N. Shazeer, “Attention is all you")
    assert "<i>Advances in Neural Information Processing Systems</i>" in cite["reference_html"]
    assert cite["in_text"] == "[1]"
    # The text is the MCP tool's (format_citations), not a second formatting of its own.
    tool = citations_for_project(project=None, refs=[paper.pk], style="ieee")
    assert cite["reference"] == tool.entries[0].reference


def test_bibtex_and_ris_are_offered_beside_the_styles(admin_client: Client, paper: Paper) -> None:
    box = cite_box(admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
                   .content.decode())  # fmt: skip
    assert '<optgroup label="Entries">' in box
    assert (
        '<option value="bibtex">BibTeX</option>' in box
        and '<option value="ris">RIS</option>' in box
    )
    status, bibtex = cite_json(admin_client, paper, "bibtex")
    assert status == 200 and bibtex["kind"] == "export" and bibtex["in_text"] == ""
    assert bibtex["reference"].startswith(f"@article{{{paper.citekey},")
    assert "doi = {10.5555/3295222.3295349}" in bibtex["reference"]
    status, ris = cite_json(admin_client, paper, "ris")
    assert status == 200 and ris["reference"].startswith("TY  - ")
    assert "TI  - Attention is all you need" in ris["reference"]
    # Without the script, the box's links reload the page with the entry.
    page = admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]),
                            {"cite_style": "bibtex"})  # fmt: skip
    assert html.escape(f"@article{{{paper.citekey},") in cite_box(page.content.decode())


def test_an_unknown_style_is_refused_with_the_styles_offered(
    admin_client: Client, paper: Paper
) -> None:
    status, answer = cite_json(admin_client, paper, "../etc")
    assert status == 400
    assert answer["error"].startswith("Unknown style '../etc'; use one of apa, ")
    assert answer["error"].endswith("bibtex, ris.")


def test_the_box_json_needs_permission_to_view_papers(client: Client, paper: Paper) -> None:
    url = reverse("admin:papers_paper_cite", args=[paper.pk])
    assert client.get(url, {"style": "apa"}).status_code == 302  # signed out: to the login page
    client.force_login(User.objects.create_user("nobody", password="pw", is_staff=True))
    assert client.get(url, {"style": "apa"}).status_code == 403
    missing = reverse("admin:papers_paper_cite", args=[paper.pk + 1000])
    client.force_login(User.objects.create_superuser("root", password="pw"))
    assert client.get(missing, {"style": "apa"}).status_code == 404

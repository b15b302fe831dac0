"""import_bibtex, record_from_bibtex and BibTeX output: d2l.bib (488 real entries), biblatex
types, malformed files, and the round trips library -> BibTeX/JSONL -> empty library."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import bibtexparser
import pytest
from django.core.management import CommandError, call_command

from papers.bibtex import latex_escape, latex_to_text, read_bibtex, record_from_bibtex
from papers.bibtex.writer import bibtex_name
from papers.exports import render_export
from papers.models import Author, Category, Institution, Keyword, Paper, PaperIdentifier, Venue
from papers.schemas import PaperRecord
from papers.selectors import paper_get, with_relations
from papers.services import papers_upsert

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parents[2] / "fixtures" / "bibtex"
D2L = FIXTURES / "d2l.bib"
D2L_ENTRIES = 488
# d2l.bib cites 11 papers twice under two keys (Vapnik's papers as 'Vapnik.Chervonenkis.1964'
# and 'VapChe64', 'Ba.Kiros.Hinton.2016' and 'ba2016layer', ...): same title, year and first
# author, so the second entry merges into the first.
D2L_PAPERS = 477
D2L_MERGED = 11


def run(command: str, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a management command, as the shell would see them."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(command, *args, stdout=out, stderr=err)
    except CommandError as error:
        err.write(str(error))
        return error.returncode, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


def import_bibtex(*args: str) -> tuple[int, str, str]:
    return run("import_bibtex", *args, "--no-progress")


def snapshot() -> dict[str, dict[str, Any]]:
    """What a researcher reads of each paper, by citekey."""
    return {
        paper.citekey: {
            "title": paper.title,
            "authors": paper.ordered_author_names,
            "year": paper.year,
            "venue": paper.venue.name if paper.venue else None,
            "doi": paper.doi,
            "arxiv_id": paper.arxiv_id,
            "entry_type": paper.entry_type,
            "volume": paper.volume,
            "number": paper.number,
            "pages": paper.pages,
            "publisher": paper.publisher,
            "publication_date": paper.publication_date,
            "keywords": sorted(k.name for k in paper.keywords.all()),
            "other_bibtex_fields": paper.metadata.get("bibtex"),
            "authors_truncated": paper.metadata.get("authors_truncated"),
        }
        for paper in with_relations(Paper.objects.all())
    }


def assert_same_library(
    after: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]]
) -> None:
    assert after.keys() == before.keys()
    differences = [
        (citekey, name, before[citekey][name], after[citekey][name])
        for citekey in before
        for name in before[citekey]
        if after[citekey][name] != before[citekey][name]
    ]
    assert differences == []


def empty_the_library() -> None:
    for model in (Paper, Author, Venue, Keyword, Institution, Category):
        model.objects.all().delete()


@pytest.fixture
def d2l() -> str:
    code, out, err = import_bibtex(str(D2L))
    assert code == 0, err
    return out


# --- d2l.bib --------------------------------------------------------------------------


def test_import_bibtex_imports_every_d2l_entry(d2l: str) -> None:
    assert (
        f"{D2L_ENTRIES} records: {D2L_PAPERS} created, {D2L_MERGED} updated, 0 skipped "
        "(already in the library, unchanged), 0 failed"
    ) in d2l
    assert Paper.objects.count() == D2L_PAPERS
    merged = [p for p in Paper.objects.all() if p.identifiers.filter(scheme="citekey").count() == 2]
    assert len(merged) == D2L_MERGED
    # Every key of the file still names a paper: the citekey, or an alias of the merged one.
    keys = re.findall(r"^@\w+\{\s*([^,\s]+),", D2L.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(keys) == D2L_ENTRIES
    assert len({paper_get(ref=key).pk for key in keys}) == D2L_PAPERS
    assert paper_get(ref="VapChe64") == paper_get(ref="Vapnik.Chervonenkis.1964")


def test_import_bibtex_decodes_latex_and_drops_et_al(d2l: str) -> None:
    tensorflow = paper_get(ref="Abadi.Barham.Chen.ea.2016")
    assert tensorflow.title == "TensorFlow: A system for large-scale machine learning"
    assert tensorflow.ordered_author_names[0] == "Martín Abadi"
    assert len(tensorflow.ordered_author_names) == 10  # 'and et al.' is not an author
    assert tensorflow.metadata["authors_truncated"] is True
    assert tensorflow.venue.name == (
        "12th USENIX Symposium on Operating Systems Design and Implementation (OSDI 16)"
    )
    assert (tensorflow.entry_type, tensorflow.pages, tensorflow.year) == (
        "inproceedings",
        "265--283",
        2016,
    )
    assert tensorflow.source == "bibtex"
    llama = paper_get(ref="touvron2023llama")
    assert "Timothée Lacroix" in llama.ordered_author_names
    assert (llama.year, llama.arxiv_id) == (2023, "2302.13971")  # year = {2023a}
    cajal = paper_get(ref="Cajal.Azoulay.1894")
    assert cajal.ordered_author_names[0] == "Santiago Ramón y Cajal"  # 'Cajal, Santiago,'
    assert "Idées" in cajal.title
    vit = paper_get(ref="Dosovitskiy.Beyer.Kolesnikov.ea.2021*1")
    assert vit.title.startswith("An image is worth $16\\times 16$ words")  # math kept
    assert not Paper.objects.filter(title__contains="\\'").exists()
    assert not Author.objects.filter(name__regex=r"[{}\\]").exists()


def test_second_bibtex_import_creates_nothing(d2l: str) -> None:
    code, out, _ = import_bibtex(str(D2L))
    assert code == 0
    assert f"{D2L_ENTRIES} records: 0 created, 0 updated, {D2L_ENTRIES} skipped" in out
    assert Paper.objects.count() == D2L_PAPERS


def test_import_bibtex_adds_papers_to_a_project() -> None:
    code, _, err = import_bibtex(str(FIXTURES / "biblatex-types.bib"), "--project", "Thesis")
    assert code == 0, err
    assert Paper.objects.filter(project_links__project__name="Thesis").count() == 8


# --- biblatex types and fields ----------------------------------------------------------


@pytest.fixture
def biblatex() -> None:
    code, _, err = import_bibtex(str(FIXTURES / "biblatex-types.bib"))
    assert code == 0, err


def test_import_bibtex_keeps_biblatex_types(biblatex: None) -> None:
    types = dict(
        PaperIdentifier.objects.filter(scheme="citekey").values_list("value", "paper__entry_type")
    )
    assert types == {
        "online2023": "online",
        "thesis2019": "thesis",
        "report2018": "report",
        "phd2010": "phdthesis",
        "tech2015": "techreport",
        "incoll2012": "incollection",
        "misc2017": "misc",
        "article2020": "article",
    }


def test_import_bibtex_maps_fields(biblatex: None) -> None:
    online = paper_get(ref="online2023")
    assert online.ordered_author_names == ["Jörg Müller", "Søren Østergaard"]
    assert (online.year, online.publication_date) == (2023, "2023-05-17")  # biblatex date
    assert online.source_url == "https://example.org/accents?x=1%20y"  # % is not a comment
    assert {k.name for k in online.keywords.all()} == {"accents", "LaTeX", "unicode"}
    assert online.metadata["bibtex"] == {"urldate": "2024-01-02"}

    thesis = paper_get(ref="thesis2019")
    assert thesis.title == "On the Theory of Everything & Nothing"
    assert thesis.ordered_author_names == ["Francisco José García-Peñalvo"]
    assert thesis.publisher == "Universidad de Salamanca"
    assert thesis.metadata["bibtex"] == {"type": "phdthesis"}

    report = paper_get(ref="report2018")
    assert report.title == "Annual report: 100% of the results"
    assert report.ordered_author_names == ["Research Group on Things"]
    assert (report.publication_date, report.number) == ("2018-03", "TR-42")  # month = mar

    tech = paper_get(ref="tech2015")
    assert tech.title == "The TeXbook Errata $\\alpha_1$"
    assert (tech.publisher, tech.publication_date) == ("Stanford University", "2015-07")

    chapter = paper_get(ref="incoll2012")
    assert chapter.venue.name == "Neural Networks: Tricks of the Trade"
    assert (chapter.doi, chapter.pages) == ("10.1007/978-3-642-35289-8_26", "437--478")
    assert chapter.metadata["bibtex"]["editor"] == "Montavon, Grégoire and Orr, Geneviève B."

    attention = paper_get(ref="misc2017")
    assert attention.arxiv_id == "1706.03762"  # eprint + archiveprefix, version dropped
    assert attention.abstract.startswith("The dominant sequence transduction models")
    assert attention.metadata["bibtex"] == {"primaryclass": "cs.CL"}
    assert attention.metadata["authors_truncated"] is True

    article = paper_get(ref="article2020")
    assert article.title == "Concatenated Titles Work"  # "..." # {...} # "..."
    # @string tpami = ieee # "..." resolved through two macros
    assert article.venue.name == "IEEE Transactions on Pattern Analysis and Machine Intelligence"
    assert (article.volume, article.number, article.pages) == ("42", "7", "1--10")
    assert article.publication_date == "2020-12"
    assert article.metadata["bibtex"] == {"note": "Special issue"}


def test_import_bibtex_splits_names_the_bibtex_way(biblatex: None) -> None:
    names = paper_get(ref="phd2010").ordered_author_names
    assert names == ["Jan van der Berg", "Juan de la Cruz", "John Smith Jr."]
    families = dict(Author.objects.values_list("name", "family_name"))
    assert families["Jan van der Berg"] == "van der Berg"
    assert families["John Smith Jr."] == "Smith Jr."


def test_record_from_bibtex_needs_a_title() -> None:
    from core.errors import InvalidInput

    with pytest.raises(InvalidInput, match="title"):
        record_from_bibtex({"ENTRYTYPE": "article", "ID": "x", "author": "Doe, Jane"})


# --- error paths ----------------------------------------------------------------------


def test_import_bibtex_of_a_missing_file_is_exit_2(tmp_path: Path) -> None:
    code, _, err = import_bibtex(str(tmp_path / "nope.bib"))
    assert code == 2
    assert "Cannot read" in err


def test_import_bibtex_of_a_file_without_entries_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "empty.bib"
    path.write_text('% only a comment\n@string{x = "y"}\n@comment{nothing}\n', encoding="utf-8")
    code, _, err = import_bibtex(str(path))
    assert code == 2
    assert "holds no records" in err
    assert not Paper.objects.exists()


def test_import_bibtex_of_a_binary_file_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "latin1.bib"
    path.write_bytes(b"@article{x, title = {Caf\xe9}}\n")
    code, _, err = import_bibtex(str(path))
    assert code == 2
    assert "Cannot read" in err


def test_malformed_entries_are_reported_and_the_rest_imported() -> None:
    code, out, err = import_bibtex(str(FIXTURES / "malformed.bib"))
    assert code == 1
    assert (
        "8 records: 4 created, 1 updated, 0 skipped (already in the library, unchanged), 3 failed"
        in out
    )
    assert re.search(r"skipped entry broken2020 \(line 10\): not valid BibTeX: field 'title'", err)
    assert re.search(
        r"skipped entry nokeycomma2020 \(line 16\): not valid BibTeX: Expected comma", err
    )
    assert "skipped entry notitle2021 (line 21): A paper needs a title." in err
    assert "3 of 8 records failed" in err
    assert set(Paper.objects.values_list("title", flat=True)) == {
        "A good first entry",
        "A good second entry",
        "A good third entry",
        "An unrelated note that reuses a key",
    }
    # A repeated field: the first value wins, as in BibTeX, and it is reported.
    assert paper_get(ref="good2021second").year == 2021
    assert "entry good2021second (line 27): field 'year' appears twice" in err


def test_duplicate_keys_keep_the_first_entry_and_import_a_different_paper_separately() -> None:
    code, _, err = import_bibtex(str(FIXTURES / "malformed.bib"))
    assert code == 1
    first = paper_get(ref="good2020first")
    assert first.title == "A good first entry"
    assert first.doi == "10.1234/good.first"  # the repeat was the same paper: merged
    assert "entry good2020first (line 35): key 'good2020first' repeats an earlier entry" in err
    other = Paper.objects.get(title="An unrelated note that reuses a key")
    assert other.citekey == "other2019unrelated"
    assert other.metadata["bibtex_duplicate_key"] == "good2020first"
    assert not PaperIdentifier.objects.filter(paper=other, scheme="citekey").exists()
    assert "entry good2020first (line 43): key 'good2020first' is already used" in err


def test_read_bibtex_reads_text_and_never_raises_on_garbage() -> None:
    from core.errors import InvalidInput

    text = "@article{a, title = {T}, year = {2020}}\n@article{\n@@@ }}} = ,,\n@book{b, title = {U"
    items = list(read_bibtex(text))
    assert items[0].data == {"ENTRYTYPE": "article", "ID": "a", "title": "T", "year": "2020"}
    assert len(items) > 1
    for item in items[1:]:
        if item.error is None:
            with pytest.raises(InvalidInput):
                record_from_bibtex(item.data)


# --- writing BibTeX -------------------------------------------------------------------

TRICKY_TEXT = [
    "Costs of 100% & $5 #1 under_score {braces} ~tilde ^caret back\\slash",
    "The -- and --- dashes, ``quotes'' and 'single' ones, ?` and !`",
    "An image is worth $16\\times 16$ words",
    "Prices $5 and $10",
    "Ünïcödé – 日本語 — ✓",
]


@pytest.mark.parametrize("text", TRICKY_TEXT)
def test_escaped_text_decodes_to_itself(text: str) -> None:
    assert latex_to_text(latex_escape(text)) == text


def test_exported_bibtex_parses_strictly_and_reads_back_identically() -> None:
    """No TeX here to compile with: bibtexparser's strict parse stands in (no failed block,
    every field's braces balanced, as BibTeX needs them) before the import round trip."""
    records = [
        PaperRecord.build(
            title=title,
            authors=["Jan van der Berg", "John Smith Jr.", "Ana María García", "Barnes and Noble"],
            year=2020,
            publication_date="2020-05",
            venue="Journal of R&D #5",
            doi=f"10.1000/a_b.{number}",  # one paper each: the same DOI would merge them
            keywords=["R&D", "50% off"],
            abstract=title,
        )
        for number, title in enumerate(TRICKY_TEXT)
    ]
    papers_upsert(records=records)
    before = snapshot()
    text = render_export(with_relations(Paper.objects.all()), "bibtex")
    parsed = bibtexparser.parse_string(text)
    assert not parsed.failed_blocks
    assert len(parsed.entries) == len(TRICKY_TEXT)
    for entry in parsed.entries:
        for entry_field in entry.fields:
            assert balanced_braces(entry_field.value), (entry.key, entry_field.key)
    title_field = parsed.entries[0].fields_dict["title"].value
    assert "\\%" in title_field and "\\&" in title_field and "\\#" in title_field
    assert "\\_" in title_field and "\\textbackslash{}" in title_field
    assert "{Costs}" in title_field  # capitalised words keep their case in any style
    assert "doi = {10.1000/a_b.0}" in text  # DOIs and URLs are verbatim, not escaped
    empty_the_library()
    code, _, err = import_bibtex_text(text)
    assert code == 0, err
    assert_same_library(snapshot(), before)


@pytest.mark.parametrize(
    ("doi", "url"),
    [
        ("10.1000/open{brace", "https://example.org/paper}closed"),
        ("10.1000/two}}closed{", "https://example.org/{a}/{b"),
    ],
)
def test_unbalanced_braces_in_a_doi_or_url_lose_no_field_on_the_way_back(
    doi: str, url: str
) -> None:
    # Braces in a verbatim field are dropped on import (they are BibTeX's grouping), so an
    # unbalanced one must not reach the file, where it would swallow the following fields.
    papers_upsert(
        records=[
            PaperRecord.build(
                title="Braces in Identifiers",
                authors=["Ada Lovelace"],
                year=2021,
                publication_date="2021-03",
                doi=doi,
                source_url=url,
                arxiv_id="2101.00001",
                abstract="What follows the URL must survive.",
                keywords=["parsing"],
                pages="3--9",
            )
        ]
    )
    before = snapshot()
    text = render_export(with_relations(Paper.objects.all()), "bibtex")
    assert not bibtexparser.parse_string(text).failed_blocks
    empty_the_library()
    code, out, err = import_bibtex_text(text)
    assert code == 0, err
    assert "1 records: 1 created" in out
    unbraced = {"doi": doi.replace("{", "").replace("}", "").lower()}
    expected = {key: {**fields, **unbraced} for key, fields in before.items()}
    assert_same_library(snapshot(), expected)
    paper = Paper.objects.get()
    assert paper.source_url == url.replace("{", "").replace("}", "")
    assert paper.abstract == "What follows the URL must survive."


def balanced_braces(text: str) -> bool:
    depth = 0
    for index, char in enumerate(text):
        escaped = index > 0 and text[index - 1] == "\\"
        if char == "{" and not escaped:
            depth += 1
        elif char == "}" and not escaped:
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def import_bibtex_text(text: str) -> tuple[int, str, str]:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".bib", encoding="utf-8", delete=False) as f:
        f.write(text)
    try:
        return import_bibtex(f.name)
    finally:
        Path(f.name).unlink()


# --- round trips ----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "papers"), [("d2l.bib", D2L_PAPERS), ("biblatex-types.bib", 8)])
def test_library_round_trips_through_bibtex(name: str, papers: int) -> None:
    code, _, err = import_bibtex(str(FIXTURES / name))
    assert code == 0, err
    before = snapshot()
    assert len(before) == papers
    text = render_export(with_relations(Paper.objects.all()), "bibtex")
    empty_the_library()
    assert not Paper.objects.exists()
    code, out, err = import_bibtex_text(text)
    assert code == 0, err
    assert f"{papers} records: {papers} created, 0 updated" in out
    assert_same_library(snapshot(), before)


def test_d2l_round_trips_through_jsonl(d2l: str, tmp_path: Path) -> None:
    before = snapshot()
    path = tmp_path / "library.jsonl"
    path.write_text(render_export(with_relations(Paper.objects.all()), "jsonl"), encoding="utf-8")
    empty_the_library()
    code, out, err = run("import_jsonl", str(path), "--no-progress")
    assert code == 0, err
    assert f"{D2L_PAPERS} records: {D2L_PAPERS} created, 0 updated" in out
    assert_same_library(snapshot(), before)
    # What BibTeX import kept on the side survives too. (A JSONL record holds one
    # identifier per scheme, so a paper merged from two entries keeps one of its keys.)
    vapnik = Paper.objects.get(citekey__startswith="vapnik1964")
    kept = PaperIdentifier.objects.get(paper=vapnik, scheme="citekey").value
    assert kept in ("VapChe64", "Vapnik.Chervonenkis.1964")
    assert paper_get(ref="Abadi.Barham.Chen.ea.2016").metadata["authors_truncated"] is True


def test_imported_entries_get_better_bibtex_citekeys_and_keep_the_file_key(d2l: str) -> None:
    tensorflow = paper_get(ref="Abadi.Barham.Chen.ea.2016")
    assert tensorflow.citekey == "abadi2016tensorflow"
    assert paper_get(ref="abadi2016tensorflow") == tensorflow
    # A key that already is the paper's Better-BibTeX key stays its citekey.
    assert paper_get(ref="touvron2023llama").citekey == "touvron2023llama"
    # Two entries, one base: the second gets Better BibTeX's suffix; both file keys work.
    plain = paper_get(ref="Dosovitskiy.Beyer.Kolesnikov.ea.2021")
    math = paper_get(ref="Dosovitskiy.Beyer.Kolesnikov.ea.2021*1")
    assert {plain.citekey, math.citekey} == {"dosovitskiy2021image", "dosovitskiy2021imagea"}


def test_a_generated_citekey_never_takes_another_papers_file_key() -> None:
    code, _, err = import_bibtex_text(
        "@article{smith2020deep, title={Something Else Entirely}, author={Jones, A.}, year={2019}}"
    )
    assert code == 0, err
    code, _, err = import_bibtex_text(
        "@article{S.2020, title={Deep Things}, author={Smith, B.}, year={2020}}"
    )
    assert code == 0, err
    assert paper_get(ref="smith2020deep").title == "Something Else Entirely"
    assert paper_get(ref="S.2020").citekey == "smith2020deepa"


def test_bibtex_family_names_shape_ids_and_round_trip(d2l: str) -> None:
    """'Ramón y Cajal, Santiago' keeps its whole family name: in the author row, the human
    id, the citekey and the BibTeX written back."""
    paper = paper_get(ref="Cajal.Azoulay.1894")
    assert paper.citekey.startswith("ramonycajal1894")
    first = paper.author_links.select_related("author").get(position=0).author
    assert (first.family_name, first.given_name) == ("Ramón y Cajal", "Santiago")
    assert paper.human_id == "[Ramon y Cajal, S., Azoulay, L. 1894]"
    text = render_export(with_relations(Paper.objects.filter(pk=paper.pk)), "bibtex")
    assert "Ramón y Cajal, Santiago and Azoulay, L." in text


# --- the rules the round trips rely on, one by one -------------------------------------


@pytest.mark.parametrize(
    ("family", "given", "written"),
    [
        ("Abadi", "Martín", "Abadi, Martín"),
        ("Anderson", "Sandra", "Anderson, Sandra"),  # 'and' inside a word is no separator
        ("Sand and Co", "Ann", "{Sand and Co}, Ann"),
        ("Smith, Inc", "Jo", "{Smith, Inc}, Jo"),
        ("Mills", "Ann AND Bo", "Mills, {Ann AND Bo}"),
        ("Smith Jr.", "John", "Smith, Jr., John"),
        ("Iv Petrov", "Ivan", "Iv Petrov, Ivan"),  # a suffix only at the end
        ("van der Berg", "Jan", "van der Berg, Jan"),
        ("Plato", "", "Plato"),
        ("Barnes and Noble", "", "{Barnes and Noble}"),
    ],
)
def test_author_names_are_written_so_bibtex_splits_them_back(
    family: str, given: str, written: str
) -> None:
    assert bibtex_name(family, given) == written


def test_a_year_with_a_letter_and_a_month_name_survive_import_and_export() -> None:
    code, _, err = import_bibtex_text(
        "@article{lee2023a, title = {Lettered Years}, author = {Lee, Kim},\n"
        "  year = {2023a}, month = {Sept.}}\n"
        "@article{lee2023b, title = {Abbreviated Months}, author = {Lee, Kim},\n"
        "  year = {2023}, month = {jan.}}\n"
    )
    assert code == 0, err
    lettered, abbreviated = paper_get(ref="lee2023a"), paper_get(ref="lee2023b")
    assert (lettered.year, lettered.publication_date) == (2023, "2023-09")
    assert abbreviated.publication_date == "2023-01"
    text = render_export(with_relations(Paper.objects.all()), "bibtex")
    assert "year = {2023a}" in text and "month = {9}" in text
    assert "year = {2023}," in text and "month = {1}" in text


def test_a_repeated_key_is_the_same_paper_by_doi_whatever_the_title() -> None:
    code, _, err = import_bibtex_text(
        "@article{kim2020same, title = {First Title}, year = {2020}, doi = {10.1000/same}}\n"
        "@article{kim2020same, title = {Retitled}, year = {2021}, doi = {10.1000/SAME}}\n"
        "@article{kim2020other, title = {One Title}, year = {2020}}\n"
        "@article{kim2020other, title = {Another Title}, year = {2020}}\n"
    )
    assert code == 0, err
    assert "key 'kim2020same' repeats an earlier entry" in err
    assert Paper.objects.filter(doi="10.1000/same").count() == 1
    # Same key and year but another title, no DOI: another paper.
    assert "key 'kim2020other' is already used" in err
    assert set(Paper.objects.values_list("title", flat=True)) == {
        "First Title",
        "One Title",
        "Another Title",
    }


def test_a_broken_entry_in_parentheses_is_named_in_the_report() -> None:
    code, _, err = import_bibtex_text(
        "@article(paren2020,\n  title = {Missing comma}\n  year = {2020})\n"
        "@article{fine2020, title = {Fine}, year = {2020}}\n"
    )
    assert code == 1
    assert re.search(r"skipped entry paren2020 \(line 1\): not valid BibTeX: \S+", err)
    assert "None" not in err
    assert paper_get(ref="fine2020").title == "Fine"


# --- PubMed, PMC and OpenReview ids ----------------------------------------------------

# As Zotero and JabRef write a PubMed item: `pmid` and `pmcid` fields.
PUBMED_ENTRY = r"""
@article{bahkir_impact_2020,
	title = {Impact of the {COVID}-19 lockdown on digital device-related ocular health},
	volume = {68},
	doi = {10.4103/ijo.IJO_2306_20},
	number = {11},
	journal = {Indian Journal of Ophthalmology},
	author = {Bahkir, Fayiqa Ahamed and Grandee, Srinivasan Subramanian},
	month = nov,
	year = {2020},
	pmid = {33120622},
	pmcid = {PMC7774196},
	pages = {2378--2383},
}
@article{eprint_pubmed,
	title = {A paper cited by its biblatex PubMed eprint},
	author = {Doe, Jane},
	year = {2019},
	eprint = {31452104},
	eprinttype = {pubmed},
}
@inproceedings{openreview_only,
	title = {A paper on OpenReview},
	author = {Roe, John},
	year = {2024},
	url = {https://openreview.net/forum?id=YicbFdNTTy},
	pmid = {not a number},
}
"""


def test_pmid_pmcid_eprint_and_openreview_url_become_identifiers() -> None:
    records = [record_from_bibtex(item.data or {}) for item in read_bibtex(PUBMED_ENTRY)]
    ids = [{k: v for k, v in r.identifiers.items() if k != "citekey"} for r in records]
    assert ids == [
        {"pmid": "33120622", "pmcid": "PMC7774196"},
        {"pmid": "31452104"},
        {"openreview": "YicbFdNTTy"},
    ]
    assert "pmid" not in records[0].metadata.get("bibtex", {})
    assert "eprint" not in records[1].metadata.get("bibtex", {})
    # A field that is not an id is kept as written, not matched on.
    assert records[2].metadata["bibtex"]["pmid"] == "not a number"


def test_pmid_and_pmcid_are_written_and_read_back() -> None:
    records = [record_from_bibtex(item.data or {}) for item in read_bibtex(PUBMED_ENTRY)]
    outcome = papers_upsert(records=records)
    papers = list(with_relations(Paper.objects.filter(pk__in=outcome.paper_ids).order_by("pk")))
    text = render_export(papers, "bibtex")
    assert "pmid = {33120622}" in text and "pmcid = {PMC7774196}" in text
    assert "url = {https://openreview.net/forum?id=YicbFdNTTy}" in text
    again = [record_from_bibtex(item.data or {}) for item in read_bibtex(text)]
    assert [r.identifiers.get("pmid") for r in again] == ["33120622", "31452104", None]
    assert again[0].identifiers["pmcid"] == "PMC7774196"
    assert again[2].identifiers["openreview"] == "YicbFdNTTy"
    Paper.objects.all().delete()
    assert papers_upsert(records=again).created == 3
    assert paper_get(ref="PMC7774196").title.startswith("Impact of the COVID-19 lockdown")

"""The evidence table export (projects/review/extraction/export.py): CSV read back with the
csv module, XLSX read back from its sheet XML, the Markdown table's shape and JSON's
cells, on a review with two extractors (an agreement, a disagreement, an adjudication and
flagged values); each study cited in a CSL style; flagged values marked in every format;
spreadsheet formulas never run; unknown formats and styles refused; the client's scope."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Callable
from xml.etree import ElementTree

import pymupdf
import pytest

from core.errors import InvalidInput, NotFound
from core.scope import client_scope
from papers.models import Annotation, Paper
from papers.pdf.locate import text_key
from projects.models import Project
from projects.review.extraction.export import EVIDENCE_FORMATS, export_evidence_table
from projects.review.extraction.services import adjudicate, extract_record, form_create
from tests.projects.review.extraction.builders import (
    ACL,
    ACL_QUOTE_CHANGED,
    ACL_VALUES,
    FIELDS,
    review_with_included,
)

# Page 7 of N18-3011, printed 'meta-' / 'data' over a line end.
OPEN_QUOTE = (
    "we make the following resources publicly available: metadata for over 20 million papers"
)
RDF_QUOTE = "Resource Description Framework (RDF) graphs"
# A text value an attacker would plant for a spreadsheet to run (with a table's column bar).
FORMULA = '=HYPERLINK("http://evil.example/?a|b","open me")'
KEYS = [f["key"] for f in FIELDS]
HEADER = ["id", "citekey", "citation", "reference", "flagged"] + [
    f"{key}{part}" for key in KEYS for part in ("", " quote", " status")
]


@pytest.fixture
def review(studies: dict[str, Paper]) -> str:
    """A review of the three studies, extracted by agents a and b, one field adjudicated.

    ACL paper: task, pages single (a); papers agreed within tolerance; graph_kind disputed
    then adjudicated; open_source disputed (flagged); years approximate (flagged).
    Quantum paper: a task value that is a formula, with no quote (not found, flagged).
    Abstract-only paper: papers anchored in the abstract (flagged)."""
    acl, quantum, abstract = studies["acl"], studies["quantum"], studies["abstract"]
    session = review_with_included([acl, quantum, abstract])
    sid = str(session.pk)
    form_create(session_id=sid, name="Study data", fields=FIELDS)
    extract_record(
        session_id=sid, paper=acl.pk, agent="a",
        values={**ACL_VALUES, "open_source": {"value": "yes", "quote": OPEN_QUOTE, "page": 7},
                "years": {"value": "2013-2018", "quote": ACL_QUOTE_CHANGED}},
    )  # fmt: skip
    extract_record(
        session_id=sid, paper=acl.pk, agent="b",
        values={"papers": {"value": 37.3, "quote": ACL_VALUES["papers"]["quote"]},
                "graph_kind": {"value": "RDF graph", "quote": RDF_QUOTE},
                "open_source": {"value": "unclear", "quote": OPEN_QUOTE}},
    )  # fmt: skip
    adjudicate(session_id=sid, paper=acl.pk, field="graph_kind", value="property graph",
               reason="Section 2 describes a property graph.", agent="judge")  # fmt: skip
    extract_record(session_id=sid, paper=quantum.pk, agent="a", values={"task": {"value": FORMULA}})
    extract_record(
        session_id=sid, paper=abstract.pk, agent="a",
        values={"papers": {"value": 37, "quote": "included 37 randomised trials"}},
    )  # fmt: skip
    return sid


def by_id(rows: list[dict[str, str]], paper: Paper) -> dict[str, str]:
    return next(row for row in rows if row["id"] == str(paper.human_id))


def csv_rows(content: str) -> tuple[list[str], list[dict[str, str]]]:
    reader = csv.reader(io.StringIO(content))
    header = next(reader)
    return header, [dict(zip(header, row, strict=True)) for row in reader]


# --- csv --------------------------------------------------------------------------------------


def test_csv_has_a_row_per_study_and_a_value_quote_and_status_per_field(
    review: str, studies: dict[str, Paper]
) -> None:
    exported = export_evidence_table(session_id=review, format="csv")
    assert (exported.format, exported.studies, exported.fields) == ("csv", 3, len(FIELDS))
    assert exported.media_type.startswith("text/csv")
    assert exported.filename == f"evidence-review-{review}.csv"
    assert isinstance(exported.content, str)
    header, rows = csv_rows(exported.content)
    assert header == HEADER and len(rows) == 3
    acl = by_id(rows, studies["acl"])
    assert (acl["task"], acl["task status"]) == (ACL_VALUES["task"]["value"], "verified")
    assert acl["task quote"] == f"{ACL_VALUES['task']['quote']} (p. 1)"
    # Agreed (37 and 37.3 within the tolerance): a's value, the verified quote.
    assert (acl["papers"], acl["papers quote"], acl["papers status"]) == (
        "37 million papers", "resulting in 37M unique paper nodes (p. 2)", "verified",
    )  # fmt: skip
    assert (acl["pages"], acl["pages quote"], acl["pages status"]) == ("8", "", "no_quote")
    # Adjudicated: the judge's value with the quote of the extractor it agrees with.
    assert (acl["graph_kind"], acl["graph_kind status"]) == ("property graph", "verified")
    assert acl["graph_kind quote"] == f"{ACL_VALUES['graph_kind']['quote']} (p. 2)"
    # Disputed: no value, each extractor's in the status.
    assert (acl["open_source"], acl["open_source quote"]) == ("", "")
    assert acl["open_source status"] == "disagreement: agent:a: yes; agent:b: unclear"
    assert acl["years"] == "2013–2018" and acl["years status"] == "approximate"
    assert acl["years quote"] == f"{ACL_QUOTE_CHANGED} (p. 3, approximate)"
    assert acl["flagged"] == "open_source (disagreement); years (approximate)"
    abstract = by_id(rows, studies["abstract"])
    assert abstract["papers quote"] == "included 37 randomised trials (abstract)"
    assert abstract["flagged"] == "papers (abstract_only)"
    assert abstract["task"] == abstract["task status"] == ""  # nobody extracted it
    quantum = by_id(rows, studies["quantum"])
    assert quantum["task status"] == "not_found" and quantum["flagged"] == "task (not_found)"


def test_each_verified_quote_is_on_the_page_the_csv_cites(review: str) -> None:
    _, rows = csv_rows(str(export_evidence_table(session_id=review, format="csv").content))
    checked = 0
    with pymupdf.open(ACL) as document:
        for row in rows:
            for key in KEYS:
                if row[f"{key} status"] != "verified" or not row[f"{key} quote"]:
                    continue
                found = re.fullmatch(r"(.+) \(p\. (\d+)\)", row[f"{key} quote"])
                assert found, row[f"{key} quote"]
                page = document[int(found.group(2)) - 1].get_text()
                assert text_key(found.group(1)) in text_key(page)
                checked += 1
    assert checked == 3  # task, papers, graph_kind


def test_each_study_is_cited_in_the_style_asked(review: str, studies: dict[str, Paper]) -> None:
    _, rows = csv_rows(str(export_evidence_table(session_id=review, format="csv").content))
    abstract = by_id(rows, studies["abstract"])
    # The default is format_citations's: APA.
    assert abstract["citation"] == "(Reader, 2020)"
    assert abstract["reference"].startswith("Reader, B. (2020). A study known by its abstract")
    # Two papers by the same authors in the same year (citeproc-py does not add 2017a/b,
    # docs/CITATIONS.md): their rows differ by id, and their references by title.
    assert {by_id(rows, studies[k])["citation"] for k in ("acl", "quantum")} == {
        "(Vaswani & Shazeer, 2017)"
    }
    assert studies["acl"].title in by_id(rows, studies["acl"])["reference"]
    _, ieee = csv_rows(
        str(export_evidence_table(session_id=review, format="csv", style="ieee").content)
    )
    assert sorted(row["citation"] for row in ieee) == ["[1]", "[2]", "[3]"]


def test_a_cell_a_spreadsheet_would_run_gets_a_leading_quote_in_csv(
    review: str, studies: dict[str, Paper]
) -> None:
    _, rows = csv_rows(str(export_evidence_table(session_id=review, format="csv").content))
    assert by_id(rows, studies["quantum"])["task"] == "'" + FORMULA
    assert not any(v.startswith(("=", "+", "-", "@")) for row in rows for v in row.values())


# --- xlsx -------------------------------------------------------------------------------------

NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def xlsx_sheet(content: bytes, number: int = 1) -> tuple[list[list[tuple[str, str]]], bytes]:
    """A sheet's rows of (text, fill colour) read from the package's XML (XlsxWriter cannot
    read), and the sheet's XML. The XML is the export's own output (S314: not untrusted)."""
    with zipfile.ZipFile(io.BytesIO(content)) as package:
        shared = [
            "".join(t.text or "" for t in item.iter(f"{NS}t"))
            for item in ElementTree.fromstring(package.read("xl/sharedStrings.xml"))  # noqa: S314
        ]
        styles = ElementTree.fromstring(package.read("xl/styles.xml"))  # noqa: S314
        xml = package.read(f"xl/worksheets/sheet{number}.xml")
    colours = [fill.find(f"{NS}patternFill/{NS}fgColor") for fill in styles.iter(f"{NS}fill")]
    fills = [colour.get("rgb", "") if colour is not None else "" for colour in colours]
    formats = [int(xf.get("fillId", 0)) for xf in next(styles.iter(f"{NS}cellXfs"))]
    rows = []
    for row in ElementTree.fromstring(xml).iter(f"{NS}row"):  # noqa: S314
        cells: dict[int, tuple[str, str]] = {}
        for cell in row.iter(f"{NS}c"):
            letters = re.match(r"[A-Z]+", cell.get("r", ""))
            assert letters
            column = 0
            for letter in letters.group(0):
                column = column * 26 + ord(letter) - 64
            value = cell.find(f"{NS}v")
            text = ""
            if value is not None:
                assert cell.get("t") == "s"  # every cell a string
                text = shared[int(value.text or 0)]
            cells[column - 1] = (text, fills[formats[int(cell.get("s", 0))]])
        rows.append([cells.get(i, ("", "")) for i in range(max(cells) + 1)])
    return rows, xml


def test_xlsx_holds_the_csvs_cells_as_strings_with_flagged_cells_filled(
    review: str, studies: dict[str, Paper]
) -> None:
    exported = export_evidence_table(session_id=review, format="xlsx")
    assert isinstance(exported.content, bytes) and exported.filename.endswith(".xlsx")
    assert exported.media_type.endswith("spreadsheetml.sheet")
    rows, xml = xlsx_sheet(exported.content)
    assert [text for text, _ in rows[0]] == HEADER
    _, expected = csv_rows(str(export_evidence_table(session_id=review, format="csv").content))
    read = [dict(zip(HEADER, [t for t, _ in row], strict=False)) for row in rows[1:]]
    for row in read:
        row.update({k: "" for k in HEADER if k not in row})
    # The same cells, except that xlsx keeps the formula-looking text as text, unprefixed.
    assert by_id(read, studies["quantum"])["task"] == FORMULA
    by_id(expected, studies["quantum"])["task"] = FORMULA
    assert sorted(map(sorted, (r.items() for r in read))) == sorted(
        map(sorted, (r.items() for r in expected))
    )
    assert b"<f>" not in xml  # no formula anywhere
    acl = next(row for row in rows[1:] if row[0][0] == str(studies["acl"].human_id))
    fill = dict(zip(HEADER, [f for _, f in acl], strict=False))
    assert fill["years"] == fill["years quote"] == fill["open_source status"] == fill["flagged"]
    assert fill["years"] and fill["papers"] != fill["years"] and fill["task"] != fill["years"]


def test_xlsx_has_the_form_on_a_second_sheet(review: str) -> None:
    rows, _ = xlsx_sheet(bytes(export_evidence_table(session_id=review, format="xlsx").content), 2)
    assert [text for text, _ in rows[0]][:3] == ["key", "label", "type"]
    assert [row[0][0] for row in rows[1 : len(FIELDS) + 1]] == KEYS
    assert rows[-1][0][0] == "Study data, version 1"


# --- markdown and json --------------------------------------------------------------------


def test_markdown_is_one_table_row_per_study_with_flagged_cells_marked(
    review: str, studies: dict[str, Paper]
) -> None:
    exported = export_evidence_table(session_id=review, format="markdown")
    assert exported.filename.endswith(".md") and exported.media_type.startswith("text/markdown")
    text = str(exported.content)
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 3  # header, rule, one line per study
    bars = [len(re.findall(r"(?<!\\)\|", line)) for line in table]
    assert bars == [len(FIELDS) + 2] * 5  # the formula's '|' does not split its cell
    assert table[0] == "| Study | Task | Papers | Pages | Graph kind | Open source | Years |"
    # The Study column tells papers with the same citation apart by their titles.
    acl = next(line for line in table if "Organising" in line)
    assert acl.startswith(f"| (Vaswani & Shazeer, 2017), “{studies['acl'].title}” | ")
    assert "| (Reader, 2020) | — |" in text
    assert "37 million papers · “resulting in 37M unique paper nodes” (p. 2)" in text
    assert "⚠ disagreement: agent:a: yes; agent:b: unclear" in acl
    assert "⚠ 2013–2018 · “" in acl and "(p. 3, approximate)" in acl
    assert "· “included 37 randomised trials” (abstract)" in text
    assert text.count("⚠ ") == 4 + 1  # the legend, then the four flagged cells
    assert "(4 here)" in text
    assert "\n## References\n" in text and "- Reader, B. (2020). A study known" in text


def test_json_holds_the_structured_cells_with_citations_and_highlights(
    review: str, studies: dict[str, Paper]
) -> None:
    exported = export_evidence_table(session_id=review, format="json")
    assert exported.media_type == "application/json" and exported.filename.endswith(".json")
    document = json.loads(str(exported.content))
    assert document["session_id"] == review and document["style"] == "apa"
    assert document["columns"] == KEYS and document["form"]["version"] == 1
    acl = next(s for s in document["studies"] if s["paper_id"] == studies["acl"].pk)
    assert acl["citation"].startswith("(Vaswani & Shazeer, 2017")
    assert acl["flagged"] == ["open_source", "years"]
    assert acl["cells"]["papers"]["value"] == {"value": 37.0, "unit": "million papers"}
    assert acl["cells"]["graph_kind"]["source"] == "adjudicated"
    assert acl["cells"]["open_source"]["values"] == {"agent:a": "yes", "agent:b": "unclear"}
    highlight = Annotation.objects.get(pk=acl["cells"]["task"]["highlight"])
    assert highlight.comment == "extraction: task (agent:a)" and highlight.page == 1
    assert acl["cells"]["years"]["highlight"] is None  # approximate: none


# --- errors, scope, projects ------------------------------------------------------------------


def test_an_unknown_format_lists_the_formats(review: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        export_evidence_table(session_id=review, format="pdf")
    assert raised.value.details["field"] == "format"
    assert all(name in raised.value.message for name in EVIDENCE_FORMATS)


def test_an_unknown_style_is_named(review: str, make_project: Callable[..., Project]) -> None:
    with pytest.raises(InvalidInput, match="Unknown citation style 'apa-nope'") as raised:
        export_evidence_table(session_id=review, style="apa-nope")
    assert raised.value.details["field"] == "style"
    # Refused as well when there is no study to cite.
    empty = make_project(name="Empty")
    form_create(project_id=empty.pk, name="f", fields=FIELDS)
    with pytest.raises(InvalidInput, match="apa-nope"):
        export_evidence_table(project_id=empty.pk, style="apa-nope")
    assert export_evidence_table(project_id=empty.pk, format="markdown").studies == 0


def test_a_projects_table_and_the_clients_collections(
    project: Project, studies: dict[str, Paper], make_project: Callable[..., Project]
) -> None:
    extract_record(project_id=project.pk, paper=studies["acl"].pk, agent="a", values=ACL_VALUES)
    exported = export_evidence_table(project_id=project.name, format="xlsx")
    assert exported.filename == "evidence-project-evidence.xlsx" and exported.studies == 3
    make_project(name="Elsewhere")
    with client_scope(("Elsewhere",)):
        with pytest.raises(NotFound):
            export_evidence_table(project_id=project.pk, format="csv")
    with client_scope((project.name,)):
        assert export_evidence_table(project_id=project.pk, format="json").studies == 3


def test_a_review_without_a_form_is_not_found(studies: dict[str, Paper]) -> None:
    session = review_with_included([studies["acl"]])
    with pytest.raises(NotFound, match="no extraction form"):
        export_evidence_table(session_id=str(session.pk), format="csv")

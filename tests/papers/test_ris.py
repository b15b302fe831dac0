"""papers/ris.py: RIS written and read back, and the identifier rule of AN / C2 / DB / UR
(module docstring); `manage.py import_ris`."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from papers.exports import render_export
from papers.models import Paper
from papers.ris import read_ris, record_from_ris
from papers.schemas import PaperRecord
from papers.selectors import paper_get, with_relations
from papers.services import papers_upsert

# A record as a PubMed-based export writes it (EndNote / Zotero style tags), a continuation
# line in the abstract, and a second record the file ends inside (no ER).
PUBMED_RIS = "\ufeff" + "\r\n".join(
    [
        "TY  - JOUR",
        "TI  - Phospholipase C-gamma1 dynamics in a refined model of chemotaxis",
        "AU  - Smith, John William",
        "A1  - Smith, John William",
        "AU  - Wang, Li",
        "T2  - J. Biol. Chem.",
        "VL  - 298",
        "IS  - 5",
        "SP  - 101886",
        "PY  - 2022",
        "DA  - 2022/5",
        "PB  - Elsevier BV",
        "AB  - Phospholipase C-gamma1 is a receptor-proximal enzyme that",
        "      promotes signal transduction.",
        "DO  - 10.1016/j.jbc.2022.101886",
        "AN  - 35367415",
        "DB  - PubMed",
        "C2  - PMC9097458",
        "KW  - mathematical model",
        "KW  - phospholipase C",
        "LA  - eng",
        "ER  - ",
        "",
        "TY  - CHAP",
        "TI  - A chapter",
        "AU  - Doe, Jane",
        "PY  - 2011///",
        "SP  - 10",
        "EP  - 20",
    ]
)


def records(text: str) -> list[PaperRecord]:
    return [record_from_ris(item.data or {}) for item in read_ris(text)]


def test_a_pubmed_record_is_read_with_its_pmid_and_pmcid() -> None:
    first, second = records(PUBMED_RIS)
    assert first.title.startswith("Phospholipase C-gamma1 dynamics")
    assert [a.name for a in first.authors] == ["Smith, John William", "Wang, Li"]
    assert (first.year, first.publication_date, first.venue) == (2022, "2022-05", "J. Biol. Chem.")
    assert (first.volume, first.number, first.pages) == ("298", "5", "101886")
    assert first.doi == "10.1016/j.jbc.2022.101886"
    assert first.abstract.endswith("enzyme that promotes signal transduction.")
    assert first.keywords == ["mathematical model", "phospholipase C"]
    assert first.identifiers == {"pmid": "35367415", "pmcid": "PMC9097458"}
    assert first.metadata["ris"]["LA"] == "eng" and first.metadata["ris"]["AN"] == "35367415"
    assert (second.entry_type, second.year, second.pages) == ("incollection", 2011, "10--20")


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        # AN is a PMID only when the database is PubMed / MEDLINE ...
        (["AN  - 35367415", "DB  - PubMed"], {"pmid": "35367415"}),
        (["AN  - 35367415", "DP  - NLM"], {"pmid": "35367415"}),
        (["AN  - 35367415", "DB  - MEDLINE"], {"pmid": "35367415"}),
        (["AN  - PMID: 35367415"], {"pmid": "35367415"}),
        # ... not from its shape alone: CINAHL and others number their records too.
        (["AN  - 107812345"], {}),
        (["AN  - 107812345", "DB  - cin20", "DP  - EBSCOhost"], {}),
        (["AN  - WOS:000234567800012", "DB  - Web of Science"], {}),
        # C2 holds a PMCID; Scopus puts the PMID there.
        (["C2  - PMC9097458"], {"pmcid": "PMC9097458"}),
        (["C2  - 35367415", "DB  - Scopus"], {"pmid": "35367415"}),
        (["C2  - 35367415"], {}),
        # URLs and notes.
        (["UR  - https://www.ncbi.nlm.nih.gov/pubmed/35367415"], {"pmid": "35367415"}),
        (["UR  - https://www.ncbi.nlm.nih.gov/pmc/articles/PMC9097458"], {"pmcid": "PMC9097458"}),
        (["UR  - https://openreview.net/forum?id=YicbFdNTTy"], {"openreview": "YicbFdNTTy"}),
        (["N1  - PMID: 35367415"], {"pmid": "35367415"}),
    ],
)
def test_the_identifier_rule(lines: list[str], expected: dict[str, str]) -> None:
    (record,) = records("\n".join(["TY  - JOUR", "TI  - T", *lines, "ER  -"]))
    assert record.identifiers == expected


@pytest.mark.django_db
def test_ris_written_names_the_pmid_as_pubmeds_and_reads_back() -> None:
    papers_upsert(records=records(PUBMED_RIS))
    papers = list(with_relations(Paper.objects.order_by("pk")))
    text = render_export(papers, "ris")
    assert "AN  - 35367415\r\nDB  - PubMed\r\nC2  - PMC9097458\r\n" in text
    again = records(text)
    assert again[0].identifiers["pmid"] == "35367415"
    assert again[0].identifiers["pmcid"] == "PMC9097458"
    assert again[0].doi == "10.1016/j.jbc.2022.101886"
    assert [r.title for r in again] == [p.title for p in papers]
    assert papers_upsert(records=again).created == 0  # the same papers, matched


@pytest.mark.django_db
def test_import_ris_command(tmp_path: Path) -> None:
    path = tmp_path / "export.ris"
    path.write_text(PUBMED_RIS + "\r\nTY  - JOUR\r\nAU  - No Title\r\nER  - \r\n")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("import_ris", str(path), "--no-progress", stdout=out, stderr=err)
    assert failed.value.returncode == 1
    assert "3 records: 2 created" in out.getvalue()
    assert "skipped record 3 (line 30)" in err.getvalue()
    assert paper_get(ref="pmid:35367415").doi == "10.1016/j.jbc.2022.101886"

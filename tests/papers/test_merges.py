"""papers.merges through `manage.py split_wrong_merges`: a wrong merge is restored."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from papers.models import Paper
from papers.schemas import PaperRecord
from papers.services import papers_upsert

pytestmark = pytest.mark.django_db

TITLE = "note on creep buckling of columns."
KEPT = "the results of short-time elevated-temperature creep tests of columns are given"
LOST = "a method for estimating allowable load capacities of columns subject to creep"
OTHER = "the general dynamic equation of creep bending of a beam loaded laterally"
ARXIV = "the short-time creep tests of columns at elevated temperature give these results"


def split(*args: str) -> str:
    out = io.StringIO()
    call_command("split_wrong_merges", *args, stdout=out)
    return out.getvalue()


def wrongly_merged() -> Paper:
    """A paper as imports merged them before evidence was asked for: two more Cranfield
    records folded in (one from before source ids were kept beside alternates, one since),
    plus another source's abstract of the same paper."""
    record = PaperRecord.build(
        title=TITLE, venue="Cranfield collection", abstract=KEPT, source="cranfield",
        source_id="cran-1018",
    )  # fmt: skip
    paper_id = papers_upsert(records=[record]).paper_ids[0]
    paper = Paper.objects.get(pk=paper_id)
    paper.metadata["alternates"] = {
        "abstract": [
            {"value": LOST, "source": "cranfield"},
            {"value": OTHER, "source": "cranfield", "source_id": "cran-1024"},
            {"value": ARXIV, "source": "arxiv"},
        ],
        "year": [{"value": 1961, "source": "cranfield", "source_id": "cran-1024"}],
        "source_id": [{"value": "cran-1024", "source": "cranfield"}],
        "metadata.citation": [{"value": "naca tn 4000", "source": "cranfield"}],
    }
    paper.save()
    return paper


def test_split_wrong_merges_restores_the_lost_records() -> None:
    paper = wrongly_merged()
    dry = split("--dry-run")
    assert "2 records would be split out of 1 papers." in dry
    assert Paper.objects.count() == 1  # a dry run changes nothing

    out = split()
    assert "2 records split out of 1 papers." in out
    assert Paper.objects.filter(title_key="note on creep buckling of columns").count() == 3
    lost = Paper.objects.get(abstract=LOST)
    assert (lost.source, lost.venue and lost.venue.name) == ("cranfield", "Cranfield collection")
    assert lost.metadata["split_from"] == paper.human_id
    other = Paper.objects.get(abstract=OTHER)
    # the record's own values, recorded beside its source id, come back with it
    assert (other.source_id, other.year) == ("cran-1024", 1961)
    kept = Paper.objects.get(pk=paper.pk)
    assert kept.abstract == KEPT
    # another source's abstract of the same paper stays, as do unattributed alternates
    assert kept.metadata["alternates"] == {
        "abstract": [{"value": ARXIV, "source": "arxiv"}],
        "metadata.citation": [{"value": "naca tn 4000", "source": "cranfield"}],
    }
    # idempotent
    assert "0 records split out of 0 papers." in split()
    assert Paper.objects.count() == 3

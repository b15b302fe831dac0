"""papers.acl_repair through `manage.py repair_acl_records`: ACL records stored as the
corpus gave them are brought to the mapping imports now apply."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from papers.models import Paper
from papers.schemas import PaperRecord
from papers.selectors import paper_get
from papers.services import papers_upsert

pytestmark = pytest.mark.django_db

LINE = "Computational Linguistics, Volume 50, Issue 1 - March 2024"


def repair(*args: str) -> str:
    out = io.StringIO()
    call_command("repair_acl_records", *args, stdout=out)
    return out.getvalue()


def stored_as_before() -> tuple[int, int]:
    """Two ACL papers as imports stored them before the mapping."""
    records = [
        PaperRecord.build(
            title="Rethinking the Exploitation of Monolingual Data",
            authors=["Jianhui Pang", "Baosong Yang*", "Derek Fai Wong*"],
            year=2024, venue=LINE, venue_short="cl", pages="25--47", source="acl",
            source_id="2024.cl-1.2", identifiers={"acl": "2024.cl-1.2"},
        ),
        PaperRecord.build(
            title="Word Rewarding for Adequate Neural Machine Translation",
            authors=["Yuto Takebayashi", "Yuki Arase†"], year=2018, entry_type="inproceedings",
            venue="Proceedings of the 15th International Conference on Spoken Language Translation",
            pages="14-22", source="acl", identifiers={"acl": "2018.iwslt-1.3"},
        ),
        PaperRecord.build(
            title="Another paper by a marked author", authors=["Baosong Yang*"], year=2023,
            source="acl", identifiers={"acl": "2023.x-1.1"}, entry_type="inproceedings",
        ),
    ]  # fmt: skip
    ids = papers_upsert(records=records).paper_ids
    return ids[0], ids[1]  # ids[2] shares an author row with ids[0]


def test_repair_acl_records_splits_journals_pages_and_names() -> None:
    cl_id, iwslt_id = stored_as_before()
    old_id = Paper.objects.get(pk=cl_id).human_id
    assert old_id == "[Pang, J., Yang*, B., & Wong*, D. F. 2024]"
    dry = repair("--dry-run")
    assert "3 ACL papers would be repaired (authors 3, pages 1, venue 1)." in dry
    assert Paper.objects.get(pk=cl_id).human_id == old_id  # a dry run writes nothing

    out = repair()
    assert f"id changed: {old_id} -> [Pang, J., Yang, B., & Wong, D. F. 2024]" in out
    cl = Paper.objects.select_related("venue").get(pk=cl_id)
    assert cl.venue is not None and cl.venue.name == "Computational Linguistics"
    assert (cl.volume, cl.number, cl.publication_date) == ("50", "1", "2024-03")
    assert cl.metadata["acl_venue"] == LINE
    assert cl.ordered_author_names == ["Jianhui Pang", "Baosong Yang", "Derek Fai Wong"]
    assert paper_get(ref="[Pang, J., Yang, B., & Wong, D. F. 2024]").pk == cl_id
    iwslt = Paper.objects.get(pk=iwslt_id)
    assert iwslt.pages == "14--22"
    assert iwslt.ordered_author_names == ["Yuto Takebayashi", "Yuki Arase"]
    assert Paper.objects.get(title__startswith="Another").human_id == "[Yang, B. 2023]"
    assert repair() == "0 ACL papers repaired.\n"  # idempotent

"""Bringing ACL records imported before `papers.acl.acl_values` mapped them up to date:
a journal's venue line split into journal, volume, issue and month, page ranges stored as
`page_range` gives them, and footnote marks taken off author names (the paper is linked to
the clean author, and its human id made again from the clean names).

Human ids that change are reported (old -> new): the library has no alias for a human id
(only citekeys have aliases, and the marks never reach a citekey), so a note that quoted
the old id must be updated by hand. Running it again changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from papers.acl import author_name_clean, journal_parts
from papers.identifiers import fold_key, human_id_base, human_id_from_base, page_range
from papers.models import Author, Paper, Venue
from papers.search.index import papers_changed


@dataclass
class AclRepair:
    paper_id: int
    changes: list[str] = field(default_factory=list)  # field names
    old_human_id: str = ""
    new_human_id: str = ""


def _acl_papers() -> Iterator[Paper]:
    papers = Paper.objects.filter(Q(source="acl") | Q(identifiers__scheme="acl")).distinct()
    return papers.select_related("venue").order_by("pk").iterator(chunk_size=1000)


def _clean_author(author: Author) -> None:
    """The author's names without marks. The row is keyed by the folded name, which the
    marks never reached, so it is the clean author's row: renamed in place, it is right
    for every paper that links it."""
    author.name = author_name_clean(author.name)
    author.family_name = author_name_clean(author.family_name)
    author.given_name = author_name_clean(author.given_name)
    author.save(update_fields=["name", "family_name", "given_name", "updated_at"])


@transaction.atomic
def _repair(paper: Paper, *, dry_run: bool) -> AclRepair:
    repair = AclRepair(paper_id=paper.pk)
    venue_line = paper.venue.name if paper.venue else ""
    journal = journal_parts(venue_line) if paper.entry_type == "article" else None
    if journal and paper.venue is not None:
        repair.changes.append("venue")
        if not dry_run:
            venue, _ = Venue.objects.get_or_create(
                name_key=fold_key(journal["venue"]),
                defaults={"name": journal["venue"], "short_name": paper.venue.short_name},
            )
            paper.metadata.setdefault("acl_venue", venue_line)
            paper.venue = venue
            paper.volume = paper.volume or journal["volume"]
            paper.number = paper.number or journal.get("number", "")
            if journal.get("month") and paper.year and not paper.publication_date:
                paper.publication_date = f"{paper.year}-{journal['month']}"
    if paper.pages and page_range(paper.pages) != paper.pages:
        repair.changes.append("pages")
        paper.pages = page_range(paper.pages)
    links = list(paper.author_links.select_related("author").order_by("position"))
    marked = [link for link in links if author_name_clean(link.author.name) != link.author.name]
    # Another paper may have cleaned a shared author row already: the paper's own text says.
    stale = author_name_clean(paper.authors_string) != paper.authors_string
    if marked or stale:
        repair.changes.append("authors")
        if not dry_run:
            for link in marked:
                _clean_author(link.author)
            names = [author_name_clean(link.author.name) for link in links]
            paper.authors_string = ", ".join(names)
            base = human_id_base(names, paper.year)
            if base != paper.human_id_base:
                repair.old_human_id = paper.human_id
                top = Paper.objects.filter(human_id_base=base).aggregate(top=Max("human_id_seq"))
                paper.human_id_base, paper.human_id_seq = base, (top["top"] or 0) + 1
                paper.human_id = human_id_from_base(base, paper.human_id_seq)
                repair.new_human_id = paper.human_id
    if repair.changes and not dry_run:
        paper.updated_at = timezone.now()
        paper.save()
        papers_changed([paper.pk])
    return repair


def acl_records_repair(*, dry_run: bool = False) -> Iterator[AclRepair]:
    """Repair each ACL paper that needs it, one transaction a paper; yields what changed
    (with `dry_run`, what would change, writing nothing)."""
    for paper in _acl_papers():
        repair = _repair(paper, dry_run=dry_run)
        if repair.changes:
            yield repair

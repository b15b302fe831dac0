"""Writes to the paper library: upsert with de-duplication, keywords, citations.

De-duplication order (first hit wins): DOI (the column or a DOI alias row), arXiv id,
another identifier of the same scheme (PMID, PMCID, OpenReview, ACL id, engine ids; never a
citekey), a preprint's published version's DOI (the rule in papers.matching's docstring),
then the same normalised title with enough evidence and none against
(`papers.matching.same_paper_by_title`, which also names the year rule) and no identifier
of the same scheme contradicting.
Merging never loses information: empty fields are filled, and a value that differs from
the one kept is recorded under `metadata["alternates"][field]` with its source (and the
record's source id, so that `manage.py split_wrong_merges` can rebuild a record merged by
mistake).

One module because upsert, de-duplication and merging are one write: the match keys that
find an existing paper are the ones the merge records alternates under, in one transaction;
keywords and citations are small writes of the same records.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from core.errors import InvalidInput
from core.sql import among
from papers.bulk import insert_objects, insert_rows
from papers.identifiers import (
    citekey_base,
    citekey_suffixes,
    fold_key,
    human_id_base,
    human_id_from_base,
    is_valid_citekey,
)
from papers.matching import Description, same_paper_by_title
from papers.models import (
    Author,
    Category,
    Institution,
    Keyword,
    Paper,
    PaperAuthor,
    PaperCategory,
    PaperIdentifier,
    PaperKeyword,
    Venue,
)
from papers.schemas import SCHOLAR_FIELDS, PaperRecord, keyword_key, keywords_clean
from papers.search.index import papers_changed

# Paper fields filled from a record when empty, and recorded as alternates when different.
MERGED_TEXT_FIELDS = (
    "abstract",
    "snippet",
    "publication_info",
    "publication_date",
    "volume",
    "number",
    "pages",
    "publisher",
    "source_url",
    "pdf_url",
    *SCHOLAR_FIELDS,
)
GENERIC_ENTRY_TYPES = {"article", "misc"}
# Citekey aliases name a paper for lookups but never identify it across sources: two
# BibTeX files may both use `smith2020` for different papers.
NON_IDENTIFYING_SCHEMES = {"citekey"}


@dataclass
class UpsertOutcome:
    """What an upsert did; `paper_ids[i]` is the paper that input record i landed on."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    paper_ids: list[int] = field(default_factory=list)

    def add(self, other: UpsertOutcome) -> None:
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged


# What a caller in a layer above papers does with the papers a write saved, inside the write's
# transaction: `projects.services.projects_adder` files them into projects.
OnSaved = Callable[[list[int]], object]


def paper_upsert(*, record: PaperRecord, on_saved: OnSaved | None = None) -> tuple[Paper, bool]:
    """Create or merge one paper. Returns (paper, created)."""
    outcome = papers_upsert(records=[record], on_saved=on_saved)
    paper = Paper.objects.get(pk=outcome.paper_ids[0])
    return paper, outcome.created == 1


@transaction.atomic
def papers_upsert(
    *, records: Sequence[PaperRecord], on_saved: OnSaved | None = None
) -> UpsertOutcome:
    """Create or merge many papers in one transaction, de-duplicating against the library
    and within the batch. `on_saved`, if given, gets every record's paper_id (in record
    order) before the transaction commits.

    Records that duplicate an earlier record of the same batch are applied in a later pass,
    after the first one is written, so they merge into it like any other duplicate.
    """
    outcome = UpsertOutcome(paper_ids=[0] * len(records))
    pending = list(range(len(records)))
    while pending:
        this_pass, deferred = _split_batch_duplicates(records, pending)
        pass_outcome, ids = _upsert_pass([records[i] for i in this_pass])
        for index, paper_id in zip(this_pass, ids, strict=True):
            outcome.paper_ids[index] = paper_id
        outcome.add(pass_outcome)
        pending = deferred
    if on_saved is not None:
        on_saved(outcome.paper_ids)
    return outcome


def papers_upsert_retrying(
    *, records: Sequence[PaperRecord], on_saved: OnSaved | None = None, attempts: int = 5
) -> UpsertOutcome:
    """papers_upsert for writers that race others (engine searches, reviews, parallel
    clients). Two transactions saving the same new paper, or two new papers given the same
    human id or citekey, collide on a unique constraint; the loser tries again, and then
    merges into what the winner saved. Must be called outside a transaction (the retry
    needs a fresh one)."""
    for attempt in range(1, attempts + 1):
        try:
            return papers_upsert(records=records, on_saved=on_saved)
        except IntegrityError:
            if attempt == attempts or transaction.get_connection().in_atomic_block:
                raise
            time.sleep(random.uniform(0.01, 0.05) * attempt)
    raise AssertionError("unreachable")


def _match_keys(record: PaperRecord) -> list[tuple[str, str]]:
    keys = [
        (
            "title",
            f"{record.title_key}|{record.year}|"
            f"{record.first_author_family or 'venue:' + fold_key(record.venue)}",
        )
    ]
    if record.first_author_family:
        # Same title and first author in another year may be the preprint of the same
        # paper (see _title_match): decide it against the library, in a later pass.
        keys.append(("title-author", f"{record.title_key}|{record.first_author_family}"))
    if record.doi:
        keys.append(("doi", record.doi))
    if published_doi := _published_doi(record):
        # A preprint and its published version in one batch: the later one waits a pass
        # and then matches the saved one (_find_existing).
        keys.append(("doi", published_doi))
    if record.arxiv_id:
        keys.append(("arxiv", record.arxiv_id))
    keys.extend(
        (f"id:{scheme}", value)
        for scheme, value in record.identifiers.items()
        if scheme not in NON_IDENTIFYING_SCHEMES
    )
    return keys


def _split_batch_duplicates(
    records: Sequence[PaperRecord], indexes: list[int]
) -> tuple[list[int], list[int]]:
    seen: set[tuple[str, str]] = set()
    this_pass, deferred = [], []
    for index in indexes:
        keys = _match_keys(records[index])
        if any(key in seen for key in keys):
            deferred.append(index)
        else:
            seen.update(keys)
            this_pass.append(index)
    return this_pass, deferred


# --- finding what already exists ------------------------------------------------------


def _published_doi(record: PaperRecord) -> str | None:
    """The DOI of the published version a preprint's record names (bioRxiv, medRxiv,
    Europe PMC preprints), when it is not the record's own DOI."""
    value = record.identifiers.get("published_doi")
    return value if value and value != record.doi else None


def _find_existing(records: list[PaperRecord]) -> list[int | None]:
    """For each record, the paper_id it duplicates, or None."""
    dois = {r.doi for r in records if r.doi}
    published = {value for r in records if (value := _published_doi(r))}
    by_doi = dict(Paper.objects.filter(doi__in=dois | published).values_list("doi", "pk"))
    # DOIs kept as identifier rows: an alias ('doi') or a preprint's published version's
    # DOI ('published_doi'); the lowest paper_id first, as the columns' own matches.
    by_doi_row: dict[tuple[str, str], int] = {}
    for scheme, value, paper_id in (
        PaperIdentifier.objects.filter(
            scheme__in=("doi", "published_doi"), value__in=dois | published
        )
        .order_by("paper_id")
        .values_list("scheme", "value", "paper_id")
    ):
        by_doi_row.setdefault((scheme, value), paper_id)
    by_arxiv = dict(
        Paper.objects.filter(arxiv_id__in={r.arxiv_id for r in records if r.arxiv_id}).values_list(
            "arxiv_id", "pk"
        )
    )
    ident_values = {
        v for r in records for s, v in r.identifiers.items() if s not in NON_IDENTIFYING_SCHEMES
    }
    by_ident = {
        (scheme, value): paper_id
        for scheme, value, paper_id in PaperIdentifier.objects.filter(
            value__in=ident_values
        ).values_list("scheme", "value", "paper_id")
    }
    title_rows: list[dict[str, Any]] = [
        dict(row)
        for row in Paper.objects.filter(title_key__in={r.title_key for r in records}).values(
            "pk", "title_key", "year", "doi", "arxiv_id", "venue__name_key", "abstract",
            "source", "source_id",
        )
    ]  # fmt: skip
    title_ids = [row["pk"] for row in title_rows]
    first_authors = dict(
        PaperAuthor.objects.filter(paper_id__in=title_ids, position=0).values_list(
            "paper_id", "author__family_name"
        )
    )
    known_idents = _identifier_pairs(title_ids)
    by_title: dict[str, list[dict[str, Any]]] = {}
    for row in title_rows:
        row["first_author"] = fold_key(first_authors.get(row["pk"], "") or "")
        row["identifiers"] = known_idents.get(row["pk"], set())
        by_title.setdefault(row["title_key"], []).append(row)

    matches: list[int | None] = []
    for record in records:
        published_doi = _published_doi(record)
        match = (
            (by_doi.get(record.doi) or by_doi_row.get(("doi", record.doi)) if record.doi else None)
            or (by_arxiv.get(record.arxiv_id) if record.arxiv_id else None)
            or next(
                (
                    by_ident[(s, v)]
                    for s, v in record.identifiers.items()
                    if (s, v) in by_ident and s not in NON_IDENTIFYING_SCHEMES
                ),
                None,
            )
            # A preprint and its published version (papers.matching's docstring): the
            # record names the library paper's DOI as its published version's, or the
            # library preprint names the record's DOI so.
            or (
                by_doi.get(published_doi) or by_doi_row.get(("doi", published_doi))
                if published_doi
                else None
            )
            or (by_doi_row.get(("published_doi", record.doi)) if record.doi else None)
            or _title_match(record, by_title.get(record.title_key, []))
        )
        matches.append(match)
    return matches


def _title_match(record: PaperRecord, candidates: list[dict[str, Any]]) -> int | None:
    """The paper with the record's title that `papers.matching.same_paper_by_title`
    accepts and no identifier of the same scheme contradicts; one of the same year first."""
    incoming = Description(
        first_author=record.first_author_family,
        year=record.year,
        venue=fold_key(record.venue) if record.venue else "",
        abstract=record.abstract,
        doi=record.doi or "",
        arxiv_id=record.arxiv_id or "",
        source=record.source,
        source_id=record.source_id,
    )
    for row in sorted(candidates, key=lambda row: row["year"] != record.year):
        known = Description(
            first_author=row["first_author"],
            year=row["year"],
            venue=row["venue__name_key"] or "",
            abstract=row["abstract"] or "",
            doi=row["doi"] or "",
            arxiv_id=row["arxiv_id"] or "",
            source=row["source"],
            source_id=row["source_id"],
        )
        if same_paper_by_title(incoming, known) and not _identifiers_conflict(
            record, row["identifiers"]
        ):
            return int(row["pk"])
    return None


def _identifiers_conflict(record: PaperRecord, known: set[tuple[str, str]]) -> bool:
    """True when the paper has an identifier of a scheme the record also has, with another
    value (two ACL Anthology ids are two papers, whatever their titles)."""
    schemes = {s: v for s, v in record.identifiers.items() if s not in NON_IDENTIFYING_SCHEMES}
    return any(scheme in schemes and schemes[scheme] != value for scheme, value in known)


# --- one pass: no two records in it duplicate each other ------------------------------


def _upsert_pass(records: list[PaperRecord]) -> tuple[UpsertOutcome, list[int]]:
    outcome = UpsertOutcome()
    matches = _find_existing(records)
    existing = Paper.objects.select_related("venue").in_bulk([m for m in matches if m])
    venue_ids = _venue_ids(records)
    existing_author_keys = _author_keys([m for m in matches if m])
    existing_idents = _identifier_pairs([m for m in matches if m])

    new_papers: list[tuple[int, Paper]] = []
    changed: dict[int, Paper] = {}
    for index, (record, match) in enumerate(zip(records, matches, strict=True)):
        if match is None:
            new_papers.append((index, _new_paper(record, venue_ids)))
            continue
        paper = existing[match]
        fields_changed = _merge_into(paper, record, venue_ids, existing_author_keys.get(match, []))
        links_changed = _has_new_links(record, existing_idents.get(match, set()))
        if fields_changed:
            changed[match] = paper
        if fields_changed or links_changed:
            outcome.updated += 1
        else:
            outcome.unchanged += 1

    _allocate_identifiers([paper for _, paper in new_papers], [records[i] for i, _ in new_papers])
    insert_objects([paper for _, paper in new_papers])
    outcome.created = len(new_papers)
    if changed:
        now = timezone.now()
        for paper in changed.values():
            paper.updated_at = now  # bulk_update does not apply auto_now
        Paper.objects.bulk_update(
            list(changed.values()),
            ["title", "year", "venue", "entry_type", "authors_string", "doi", "arxiv_id",
             "citation_count", "versions_count", "resources", "metadata", "source_id",
             "updated_at", *MERGED_TEXT_FIELDS],
            batch_size=500,
        )  # fmt: skip

    paper_ids = [0] * len(records)
    for index, paper in new_papers:
        paper_ids[index] = paper.pk
    for index, match in enumerate(matches):
        if match is not None:
            paper_ids[index] = match

    # Authors are written for new papers, and for existing ones that had none.
    needs_authors = [
        (paper_ids[i], r)
        for i, r in enumerate(records)
        if r.authors and (matches[i] is None or not existing_author_keys.get(matches[i] or 0))
    ]
    _write_authors(needs_authors)
    _write_links(records, paper_ids)
    # New papers, merged ones whose fields changed, and ones that gained keywords.
    touched = [paper_ids[i] for i, match in enumerate(matches) if match is None]
    touched += list(changed)
    touched += [paper_ids[i] for i, r in enumerate(records) if matches[i] and r.keywords]
    papers_changed(touched)
    return outcome, paper_ids


def _new_paper(record: PaperRecord, venue_ids: dict[str, int]) -> Paper:
    metadata = dict(record.metadata)
    metadata.setdefault("sources", [record.source])
    return Paper(
        title=record.title,
        title_key=record.title_key,
        entry_type=record.entry_type,
        year=record.year,
        venue_id=venue_ids.get(fold_key(record.venue)) if record.venue else None,
        authors_string=", ".join(a.name for a in record.authors),
        doi=record.doi,
        arxiv_id=record.arxiv_id,
        source=record.source,
        source_id=record.source_id,
        citation_count=record.citation_count,
        versions_count=record.versions_count,
        resources=record.resources,
        metadata=metadata,
        **{name: _record_text(record, name) for name in MERGED_TEXT_FIELDS},
    )


def _record_text(record: PaperRecord, name: str) -> str:
    if name in record.scholar:
        return record.scholar[name]
    return str(getattr(record, name, "") or "")


def _note_alternate(paper: Paper, name: str, value: Any, source: str, source_id: str = "") -> bool:
    alternates = paper.metadata.setdefault("alternates", {})
    entries = alternates.setdefault(name, [])
    if any(entry.get("value") == value for entry in entries):
        return False
    entry = {"value": value, "source": source}
    if source_id and name != "source_id":  # there the value says it
        entry["source_id"] = source_id
    entries.append(entry)
    return True


def _merge_into(
    paper: Paper, record: PaperRecord, venue_ids: dict[str, int], current_authors: list[str]
) -> bool:
    """Fold a record into an existing paper; True if any stored field changed.

    `current_authors` are the paper's author keys, in order."""
    changed = False
    source, source_id = record.source, record.source_id
    for name in MERGED_TEXT_FIELDS:
        incoming = _record_text(record, name)
        current = getattr(paper, name)
        if not incoming or incoming == current:
            continue
        if not current:
            setattr(paper, name, incoming)
            changed = True
        else:
            changed |= _note_alternate(paper, name, incoming, source, source_id)

    if record.title != paper.title:
        changed |= _note_alternate(paper, "title", record.title, source, source_id)
    if record.year is not None and paper.year is None:
        paper.year, changed = record.year, True
    elif record.year is not None and record.year != paper.year:
        changed |= _note_alternate(paper, "year", record.year, source, source_id)
    for name in ("doi", "arxiv_id"):
        incoming = getattr(record, name)
        if incoming and not getattr(paper, name):
            setattr(paper, name, incoming)
            changed = True
        elif incoming and incoming != getattr(paper, name):
            changed |= _note_alternate(paper, name, incoming, source, source_id)
    if record.venue:
        venue_id = venue_ids.get(fold_key(record.venue))
        if paper.venue_id is None:
            paper.venue_id, changed = venue_id, True
        elif venue_id != paper.venue_id:
            changed |= _note_alternate(paper, "venue", record.venue, source, source_id)
    # 'article'/'misc' are what a source says when it does not know the type: a specific
    # type replaces them, and they are never worth keeping as an alternate.
    if record.entry_type != paper.entry_type and record.entry_type not in GENERIC_ENTRY_TYPES:
        if paper.entry_type in GENERIC_ENTRY_TYPES:
            paper.entry_type, changed = record.entry_type, True
        else:
            changed |= _note_alternate(paper, "entry_type", record.entry_type, source, source_id)
    incoming_authors = [a.name for a in record.authors]
    incoming_keys = [a.key[:255] for a in record.authors]
    if incoming_keys and current_authors and incoming_keys != current_authors:
        changed |= _note_alternate(paper, "authors", incoming_authors, source, source_id)
    if incoming_authors and not current_authors:
        paper.authors_string, changed = ", ".join(incoming_authors), True
    if not paper.source_id and record.source_id:
        paper.source_id, changed = record.source_id, True
    elif record.source_id and record.source_id != paper.source_id:
        changed |= _note_alternate(paper, "source_id", record.source_id, source)
    for name in ("citation_count", "versions_count"):
        if getattr(record, name) > getattr(paper, name):
            setattr(paper, name, getattr(record, name))
            changed = True
    for resource in record.resources:
        if resource not in paper.resources:
            paper.resources.append(resource)
            changed = True
    sources = paper.metadata.setdefault("sources", [paper.source])
    if source not in sources:
        sources.append(source)
        changed = True
    for key, value in record.metadata.items():
        if key not in paper.metadata:
            paper.metadata[key] = value
            changed = True
        elif paper.metadata[key] != value and key not in ("alternates", "sources"):
            changed |= _note_alternate(paper, f"metadata.{key}", value, source, source_id)
    return changed


def _has_new_links(record: PaperRecord, existing_idents: set[tuple[str, str]]) -> bool:
    """Whether the record brings identifiers the paper lacks (keywords etc. count too)."""
    if any(pair not in existing_idents for pair in record.identifiers.items()):
        return True
    return bool(record.keywords or record.categories)


# --- identifiers for new papers -------------------------------------------------------


def _allocate_identifiers(papers: list[Paper], records: list[PaperRecord]) -> None:
    """Give new papers their human id (with -2, -3 suffixes) and a unique citekey."""
    if not papers:
        return
    bases = []
    for paper, record in zip(papers, records, strict=True):
        people = [a.person for a in record.authors]
        paper.human_id_base = human_id_base(people, record.year)
        paper.citekey_base = citekey_base(people, record.year, record.title)
        bases.append(paper.human_id_base)
    next_seq = {
        row["human_id_base"]: row["top"] + 1
        for row in Paper.objects.filter(human_id_base__in=set(bases))
        .values("human_id_base")
        .annotate(top=Max("human_id_seq"))
    }
    for paper in papers:
        seq = next_seq.get(paper.human_id_base, 1)
        next_seq[paper.human_id_base] = seq + 1
        paper.human_id_seq = seq
        paper.human_id = human_id_from_base(paper.human_id_base, seq)

    wanted = {r.preferred_citekey for r in records if r.preferred_citekey}
    taken = set(
        Paper.objects.filter(citekey_base__in={p.citekey_base for p in papers}).values_list(
            "citekey", flat=True
        )
    )
    taken |= set(Paper.objects.filter(citekey__in=wanted).values_list("citekey", flat=True))
    # A generated key never takes a key another paper of this batch asks for, nor one that
    # is already another paper's citekey alias (the key it had in an imported BibTeX file):
    # that key must keep naming that paper.
    avoided = wanted | _citekey_aliases({p.citekey_base for p in papers})
    pending = list(zip(papers, records, strict=True))
    while pending:
        for paper, record in pending:
            preferred = record.preferred_citekey
            if preferred and is_valid_citekey(preferred) and preferred not in taken:
                paper.citekey = preferred
            else:
                paper.citekey = next(
                    paper.citekey_base + suffix
                    for suffix in citekey_suffixes()
                    if paper.citekey_base + suffix not in taken
                    and paper.citekey_base + suffix not in avoided
                )
            taken.add(paper.citekey)
        # A suffixed key can be another base's plain key ('anonrole' + 's' = 'anonroles'),
        # so the chosen keys are checked as such; clashing papers pick again.
        chosen = {paper.citekey: (paper, record) for paper, record in pending}
        clashes = set(Paper.objects.filter(citekey__in=chosen).values_list("citekey", flat=True))
        pending = [chosen[key] for key in clashes]


def _citekey_aliases(bases: set[str]) -> set[str]:
    """Citekey aliases recorded for any paper that a key generated from `bases` could hit
    (the base itself and its first Better-BibTeX suffixes)."""
    candidates = sorted(
        {base + suffix for base in bases for suffix in itertools.islice(citekey_suffixes(), 27)}
    )
    # One statement with the candidates (54,000 for an import batch of 2,000) as one
    # parameter, looked up in the (scheme, value) index. Django prepares IN (...) values
    # one by one (14 % of a 95k JSONL import's time, py-spy), and ACL records each bring
    # an alias (their bibkey): reading every alias, or the candidates in chunks of IN
    # (...), was most of the identifiers' time past ~30k papers (0.45 of 0.62 s a batch
    # at 95k, cProfile).
    table = connection.ops.quote_name(PaperIdentifier._meta.db_table)
    test, wanted = among(connection.vendor, candidates)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT value FROM {table} WHERE scheme = 'citekey' AND value {test}",  # noqa: S608
            [wanted],
        )
        return {row[0] for row in cursor.fetchall()}


# --- related rows: venues, authors, keywords, categories, identifiers -----------------


def _get_or_create_ids(model: Any, rows: dict[str, dict[str, Any]]) -> dict[str, int]:
    """name_key -> id for rows keyed by name_key, creating the missing ones in bulk.

    bulk_create(ignore_conflicts) and a re-read make this safe when two writers race.
    """
    if not rows:
        return {}
    found = dict(model.objects.filter(name_key__in=rows).values_list("name_key", "id"))
    missing = [key for key in rows if key not in found]
    if missing:
        fields = ["name_key", *next(iter(rows.values())).keys()]
        insert_rows(model, fields, ([key, *rows[key].values()] for key in missing))
        found.update(model.objects.filter(name_key__in=missing).values_list("name_key", "id"))
    return found


def _venue_ids(records: Iterable[PaperRecord]) -> dict[str, int]:
    rows = {
        fold_key(r.venue): {"name": r.venue, "short_name": r.venue_short[:64]}
        for r in records
        if r.venue
    }
    return _get_or_create_ids(Venue, rows)


def _author_keys(paper_ids: list[int]) -> dict[int, list[str]]:
    """The ordered author keys of each paper (keys, so 'Léon' and 'Leon' are the same)."""
    names: dict[int, list[str]] = {}
    for paper_id, name in (
        PaperAuthor.objects.filter(paper_id__in=paper_ids)
        .order_by("paper_id", "position")
        .values_list("paper_id", "author__name_key")
    ):
        names.setdefault(paper_id, []).append(name)
    return names


def _identifier_pairs(paper_ids: list[int]) -> dict[int, set[tuple[str, str]]]:
    pairs: dict[int, set[tuple[str, str]]] = {}
    for paper_id, scheme, value in PaperIdentifier.objects.filter(
        paper_id__in=paper_ids
    ).values_list("paper_id", "scheme", "value"):
        pairs.setdefault(paper_id, set()).add((scheme, value))
    return pairs


def _write_authors(items: list[tuple[int, PaperRecord]]) -> None:
    if not items:
        return
    author_rows: dict[str, dict[str, Any]] = {}
    institution_rows: dict[str, dict[str, Any]] = {}
    for _, record in items:
        for author in record.authors:
            person = author.person
            author_rows.setdefault(
                person.key[:255],
                {
                    "name": author.name,
                    "family_name": person.family,
                    "given_name": person.given,
                    "profile_link": author.profile_link,
                },
            )
            if author.affiliation:
                institution_rows.setdefault(
                    fold_key(author.affiliation), {"name": author.affiliation}
                )
    author_ids = _get_or_create_ids(Author, author_rows)
    institution_ids = _get_or_create_ids(Institution, institution_rows)
    insert_rows(
        PaperAuthor,
        ["paper", "author", "position", "affiliation"],
        (
            (
                paper_id,
                author_ids[author.key[:255]],
                position,
                institution_ids.get(fold_key(author.affiliation)) if author.affiliation else None,
            )
            for paper_id, record in items
            for position, author in enumerate(record.authors)
        ),
    )


def _write_links(records: list[PaperRecord], paper_ids: list[int]) -> None:
    keyword_rows = {keyword_key(k): {"name": k} for r in records for k in r.keywords}
    keyword_ids = _get_or_create_ids(Keyword, keyword_rows)
    if keyword_rows:
        insert_rows(
            PaperKeyword,
            ["paper", "keyword"],
            (
                (pid, keyword_ids[keyword_key(k)])
                for r, pid in zip(records, paper_ids, strict=True)
                for k in r.keywords
            ),
        )
    category_names = {c for r in records for c in r.categories}
    if category_names:
        Category.objects.bulk_create(
            [Category(name=name[:100]) for name in category_names], ignore_conflicts=True
        )
        category_ids = dict(
            Category.objects.filter(name__in=category_names).values_list("name", "id")
        )
        insert_rows(
            PaperCategory,
            ["paper", "category"],
            (
                (pid, category_ids[c[:100]])
                for r, pid in zip(records, paper_ids, strict=True)
                for c in r.categories
            ),
        )
    insert_rows(
        PaperIdentifier,
        ["paper", "scheme", "value"],
        (
            (pid, scheme[:32], value[:255])
            for r, pid in zip(records, paper_ids, strict=True)
            for scheme, value in r.identifiers.items()
        ),
    )


# --- keywords -------------------------------------------------------------------------

KEYWORD_ACTIONS = ("add", "remove", "set")


@transaction.atomic
def paper_keywords_update(
    *,
    refs: Sequence[str | int],
    action: str,
    keywords: Sequence[str],
    scope: Sequence[str] | None = None,
) -> dict[int, list[str]]:
    """Add, remove or set keywords on several papers at once; all or nothing.

    Returns {paper_id: [keywords after the change]}. Raises InvalidInput for an unknown
    action or an invalid keyword and NotFound for an unknown paper, before writing anything.
    """
    from papers.selectors import paper_get

    if action not in KEYWORD_ACTIONS:
        raise InvalidInput(
            f"Unknown action {action!r}; use one of {', '.join(KEYWORD_ACTIONS)}.", field="action"
        )
    if not refs:
        raise InvalidInput("Name at least one paper.", field="paper_ids")
    names = keywords_clean(list(keywords))
    if action != "set" and not names:
        raise InvalidInput("Name at least one keyword.", field="keywords")
    papers = [paper_get(ref=ref, scope=scope) for ref in refs]
    keyword_ids = _get_or_create_ids(Keyword, {keyword_key(n): {"name": n} for n in names})
    wanted = set(keyword_ids.values())
    paper_ids = sorted({p.pk for p in papers})
    if action in ("remove", "set"):
        removal = PaperKeyword.objects.filter(paper_id__in=paper_ids)
        if action == "remove":
            removal = removal.filter(keyword_id__in=wanted)
        else:
            removal = removal.exclude(keyword_id__in=wanted)
        removal.delete()
    if action in ("add", "set"):
        PaperKeyword.objects.bulk_create(
            [PaperKeyword(paper_id=pid, keyword_id=kid) for pid in paper_ids for kid in wanted],
            ignore_conflicts=True,
        )
    Paper.objects.filter(pk__in=paper_ids).update(updated_at=timezone.now())
    papers_changed(paper_ids)
    result: dict[int, list[str]] = {pid: [] for pid in paper_ids}
    for pid, name in (
        PaperKeyword.objects.filter(paper_id__in=paper_ids)
        .order_by("keyword__name")
        .values_list("paper_id", "keyword__name")
    ):
        result[pid].append(name)
    return result


@transaction.atomic
def citations_add(*, pairs: Iterable[tuple[int, int]]) -> int:
    """Record `citing cites cited` for pairs of paper_ids in the library; returns rows added."""
    from papers.models import Citation

    rows = [Citation(citing_id=a, cited_id=b) for a, b in pairs if a != b]
    before = Citation.objects.count()
    Citation.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
    return Citation.objects.count() - before

"""What an extractor does next (docs/EXTRACTION.md, "Extracting"): the owner's studies
this extractor has not finished under the current form version, each with the fields
still empty and what its quotes will be anchored against, and where the work stands.

Read only: a study's PDF is not indexed here (extract_record indexes it on its first
quote, as find_quote does), so a page of studies costs a few queries whatever its size.
"""

from __future__ import annotations

from typing import Any

from core.errors import InvalidInput
from papers.models import Paper, PaperPdf, Passage
from projects.review.extraction.agreement import extraction_agreement
from projects.review.extraction.selectors import (
    cells_current,
    extraction_owner,
    form_current,
    form_describe,
    form_fields,
)
from projects.review.extraction.services import extractor_resolve

DEFAULT_LIMIT = 3
MAX_LIMIT = 20


def _text_of(paper_ids: list[int]) -> dict[int, str]:
    """paper_id -> what a quote is anchored against: `pdf` (indexed text), `pdf_unindexed`
    (a PDF whose text is read on the first quote), or `abstract` (no PDF stored: quotes
    are looked for in the title and abstract, and flagged abstract_only)."""
    with_pdf = set(
        PaperPdf.objects.filter(paper_id__in=paper_ids).values_list("paper_id", flat=True)
    )
    indexed = set(
        Passage.objects.filter(paper_id__in=with_pdf).values_list("paper_id", flat=True).distinct()
    )
    return {
        pk: "pdf" if pk in indexed else "pdf_unindexed" if pk in with_pdf else "abstract"
        for pk in paper_ids
    }


def extraction_next(
    *,
    session_id: Any = None,
    project_id: Any = None,
    user: Any = None,
    agent: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> dict[str, Any]:
    """The next `limit` studies (in the evidence table's order, by human id) this extractor
    has fields to fill in, with the form, each study's empty fields and the text its quotes
    are anchored against; this extractor's progress over all studies; and, once two
    extractors have values, their agreement and the disagreements still to adjudicate.

    Without a form: `form` is null and `next` says to create one. Raises InvalidInput (no
    extractor named, limit out of range) and NotFound (owner outside the client's scope)."""
    owner = extraction_owner(session_id=session_id, project_id=project_id)
    extractor = extractor_resolve(user=user, agent=agent)
    if not 1 <= int(limit) <= MAX_LIMIT:
        raise InvalidInput(f"limit must be 1-{MAX_LIMIT}.", field="limit")
    form = form_current(owner)
    studies = list(owner.papers().order_by("human_id").values_list("pk", flat=True))
    answer: dict[str, Any] = {**owner.as_dict(), "extractor": extractor.label}
    if form is None:
        return {
            **answer,
            "form": None,
            "studies": len(studies),
            "papers": [],
            "next": "Create the extraction form first (extraction_form with fields).",
        }
    keys = [row.key for row in form_fields(form)]
    cells = cells_current(owner, form, paper_ids=studies)
    done: dict[int, set[str]] = {
        pk: {key for key, cell in row.items() if extractor.label in cell.values}
        for pk, row in cells.items()
    }
    complete = [pk for pk in studies if done.get(pk, set()) >= set(keys)]
    started = [pk for pk in studies if done.get(pk) and pk not in complete]
    waiting = [pk for pk in studies if pk not in complete][: int(limit)]
    text = _text_of(waiting)
    papers = {
        row["pk"]: row
        for row in Paper.objects.filter(pk__in=waiting).values("pk", "human_id", "title", "year")
    }
    answer.update(
        form=form_describe(form),
        progress={
            "studies": len(studies),
            "complete": len(complete),
            "started": len(started),
            "not_started": len(studies) - len(complete) - len(started),
        },
        papers=[
            {
                "paper_id": pk,
                "id": papers[pk]["human_id"],
                "title": papers[pk]["title"],
                "year": papers[pk]["year"],
                "text": text[pk],
                "empty": [key for key in keys if key not in done.get(pk, set())],
            }
            for pk in waiting
        ],
    )
    agreement = extraction_agreement(owner=owner, shown=10)
    if agreement["overall"] is not None:
        answer["agreement"] = {
            "compared": agreement["compared"],
            "overall": agreement["overall"],
            "unresolved": agreement["unresolved"],
            "disagreements": agreement["disagreements"],
        }
    answer["next"] = _next_hint(answer)
    return answer


def _next_hint(answer: dict[str, Any]) -> str:
    if answer["papers"]:
        return (
            "Read each study (search_passages, read_pdf_pages) and record its empty fields with "
            "extract_record: a value and the quote it rests on, with its page."
        )
    unresolved = answer.get("agreement", {}).get("unresolved", 0)
    if unresolved:
        return (
            f"Every study is extracted; {unresolved} disagreement(s) to settle: extract_record "
            "with adjudicate=true and a reason."
        )
    return "Every study is extracted: export_evidence_table makes the evidence table."

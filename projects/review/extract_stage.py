"""The review's optional `extract` stage (docs/REVIEW.md "extract"): what its checkpoint
shows, and when `approve` may close it.

The extraction itself (forms, values anchored to quotes, adjudication) is
projects/review/extraction/; this module only reads it for the workflow. The checkpoint's
payload is worked out again on every look (state.py), since extractors record values
while it waits; the copy stored on the checkpoint is how things stood when it was raised.
"""

from __future__ import annotations

from typing import Any

from projects.models import ReviewSession
from projects.review.extraction.agreement import extraction_agreement
from projects.review.extraction.evidence import evidence_cell
from projects.review.extraction.selectors import Owner, cells_current, form_current, form_fields
from projects.review.workflow import Decision, DecisionAction, InvalidDecision

NO_FORM = (
    "No extraction form yet: create one with the extraction_form tool (or in the admin), "
    "then extract the included studies."
)


def extract_status(*, session: ReviewSession) -> dict[str, Any]:
    """The extract checkpoint's payload: the current form (or that none exists), the
    included studies and how far each is extracted under the current form version
    (`complete`: every field has a value, null for "not reported" included; `partly`;
    `not_started`), how many values that stand are flagged (their quote approximate, not
    found or only in the abstract), how many fields extractors disagree on with no
    adjudication, and the agreement between the two busiest extractors."""
    owner = Owner(session=session)
    paper_ids = list(owner.papers().values_list("pk", flat=True))
    form = form_current(owner)
    studies = {"included": len(paper_ids), "complete": 0, "partly": 0, "not_started": 0}
    if form is None:
        studies["not_started"] = len(paper_ids)
        return {
            "form": None,
            "create_form": NO_FORM,
            "studies": studies,
            "flagged": 0,
            "disagreements_unresolved": 0,
            "agreement": None,
        }
    keys = [row.key for row in form_fields(form)]
    cells = cells_current(owner, form, paper_ids=paper_ids)
    flagged = unresolved = 0
    for paper_id in paper_ids:
        found = cells.get(paper_id, {})
        filled = sum(1 for key in keys if key in found)
        if not filled:
            studies["not_started"] += 1
        elif filled == len(keys):
            studies["complete"] += 1
        else:
            studies["partly"] += 1
        for cell in found.values():
            shown = evidence_cell(cell)
            if shown["source"] == "disagreement":
                unresolved += 1
            elif shown["flagged"]:
                flagged += 1
    agreement = extraction_agreement(owner=owner, shown=0)
    overall = agreement["overall"]
    return {
        "form": {"name": form.name, "version": form.version, "fields": keys},
        "studies": studies,
        "flagged": flagged,
        "disagreements_unresolved": unresolved,
        "agreement": {"extractors": agreement["compared"], **overall} if overall else None,
    }


def extract_decision_check(*, session: ReviewSession, decision: Decision) -> None:
    """Before a decision closes the extract checkpoint: InvalidDecision for edit and reject
    (there is nothing to edit, and inclusion was settled at screening: sending the review
    back would orphan the values extracted), and for approve while the review has no form
    or extractors disagree on a field nobody adjudicated (the evidence table would have a
    cell with no value that stands). Nothing is changed; the checkpoint stays pending."""
    if decision.action is not DecisionAction.APPROVE:
        raise InvalidDecision(
            f"The extract checkpoint takes approve only ({decision.action.value} is refused): "
            "record values with extract_record (null = not reported), settle disagreements "
            "with extract_record(adjudicate=true), then approve. Which studies are included "
            "was decided at screen."
        )
    status = extract_status(session=session)
    if status["form"] is None:
        raise InvalidDecision(NO_FORM + " Then approve.")
    unresolved = status["disagreements_unresolved"]
    if unresolved:
        raise InvalidDecision(
            f"{unresolved} extraction disagreements are unresolved: extract_next lists "
            "them; settle each with extract_record(adjudicate=true) (or in the admin), then "
            "approve.",
            disagreements=unresolved,
        )

"""Seed a knowledge base for the collection-scope tests and print what it holds as JSON.

The MCP tests' library (tests/mcp/seed_library.py: projects "NLP Reading" and "Vision")
plus what a client scoped to "Vision" must never reach in "NLP Reading": identifiers of
every kind on its papers (DOI, arXiv, ACL Anthology, OpenAlex), a PDF with an annotation,
a summary, a finished review, a saved search and an alert, each holding a marker text.
Run in a subprocess with the server's environment, as seed_library.py is.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.mcp import seed_library

PDF_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pdfs" / "2304.02623v1.pdf"
ACL_ID = "2020.acl-main.1"
OPENALEX_ID = "W2963403868"


def main() -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        seed_library.main()
    data = json.loads(printed.getvalue().strip().splitlines()[-1])

    from django.utils import timezone

    from papers.assets.services import asset_save
    from papers.models import Paper, PaperIdentifier
    from papers.pdf.services import annotation_area_create, pdf_attach_file
    from papers.services import citations_add
    from projects.models import Alert, Project, ReviewSession, SavedSearch
    from projects.services import project_add_papers

    nlp = Project.objects.get(pk=data["projects"]["nlp"])
    attention = Paper.objects.get(pk=data["papers"]["attention"]["paper_id"])
    # A paper in both projects: the scoped client sees it, but not that it is also in nlp.
    project_add_papers(project=nlp, paper_ids=[data["papers"]["resnet"]["paper_id"]])
    # Vision's paper cites NLP's: a citation walk from it reaches a paper outside Vision.
    citations_add(pairs=[(data["papers"]["resnet"]["paper_id"], attention.pk)])
    PaperIdentifier.objects.create(paper=attention, scheme="acl", value=ACL_ID)
    PaperIdentifier.objects.create(paper=attention, scheme="openalex", value=OPENALEX_ID)
    pdf_attach_file(paper_id=attention.pk, path=PDF_FIXTURE)
    annotation_area_create(
        paper=attention, page=1, rect=[72, 72, 200, 120], comment="SECRET-ANNOTATION-NOTE"
    )
    asset_save(
        paper=attention, kind="summary", name="brief",
        content=json.dumps({"summary": "SECRET-SUMMARY-TEXT"}),
    )  # fmt: skip
    now = timezone.now()
    review = ReviewSession.objects.create(
        query="SECRET-REVIEW-QUESTION on sequence transduction",
        domain="general",
        max_results=10,
        stage="complete",
        status="complete",
        project=nlp,
        completed_at=now,
    )
    SavedSearch.objects.create(
        name="secret-watch", query="SECRET-WATCH-QUERY", project=nlp, schedule="manual"
    )
    Alert.objects.create(
        kind="new_papers", title="SECRET-ALERT-TITLE", project=nlp, paper=attention,
        key="scope-test-alert",
    )  # fmt: skip
    data["review"] = str(review.pk)
    data["acl"] = ACL_ID
    data["openalex"] = OPENALEX_ID
    print(json.dumps(data))


if __name__ == "__main__":
    main()

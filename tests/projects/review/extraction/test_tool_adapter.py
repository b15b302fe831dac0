"""The MCP tools answer what the services they call answer (so the anchoring benchmark,
which times `extract_record`'s service, measures what an agent's call gets), and
`extract_next` answers what `queue.extraction_next` answers."""

from __future__ import annotations

from typing import Any

from mcp_endpoint.tools import extraction as tools
from papers.models import Paper
from projects.models import Project
from projects.review.extraction.queue import extraction_next
from projects.review.extraction.services import extract_record
from tests.projects.review.extraction.builders import ACL_VALUES


def without_extractor(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without what differs between two extractors: their name, and the
    highlight each one's verified quotes get (an annotation of their own)."""
    shown = {key: value for key, value in answer.items() if key != "extractor"}
    shown["recorded"] = [
        {key: value for key, value in r.items() if key != "highlight"} for r in shown["recorded"]
    ]
    return shown


def test_extract_record_over_mcp_answers_what_the_service_answers(
    project: Project, studies: dict[str, Paper]
) -> None:
    paper = studies["acl"].pk
    served = extract_record(project_id=project.pk, paper=paper, agent="a", values=ACL_VALUES)
    values = {key: tools.Extracted(**item) for key, item in ACL_VALUES.items()}
    called = tools.extract_record(
        paper=paper, values=values, project_id=str(project.pk), extractor="b"
    ).model_dump()
    assert called["extractor"] == "agent:b" and served["extractor"] == "agent:a"
    assert without_extractor(called) == without_extractor(served)
    assert {r["anchor"]["status"] for r in called["recorded"]} == {"verified", "no_quote"}
    verified = [r for r in called["recorded"] if r["anchor"]["status"] == "verified"]
    assert all(isinstance(r["highlight"], int) for r in verified)


def test_extract_next_over_mcp_answers_what_the_queue_answers(
    project: Project, studies: dict[str, Paper]
) -> None:
    called = tools.extract_next(project_id=str(project.pk), extractor="a", limit=2).model_dump()
    assert called == extraction_next(project_id=str(project.pk), agent="a", limit=2)
    assert len(called["papers"]) == 2

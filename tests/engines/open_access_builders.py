"""Open-access lookups served locally (tests/fixtures/open_access) and a fixture PDF served
at a path, for the open-access tests of the service and of the MCP tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.engines.replay import ReplayServer, Reply
from tests.papers.pdf.builders import EXPOSITORY, FACTS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "open_access"


PDF_BYTES = EXPOSITORY.read_bytes()


PAGES = FACTS["2304.02623v1.pdf"]["pages"]


def served(name: str, server: ReplayServer) -> dict[str, Any]:
    """A recorded answer whose https:// addresses all point at the local server."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return json.loads(text.replace("https://", f"{server.url}/"))


def served_europepmc_answer(pmid: str, server: ReplayServer) -> dict[str, Any]:
    """Europe PMC's recorded core search answer (tests/fixtures/europepmc) cut to the one
    result with this PMID, as a DOI lookup answers, its https:// addresses pointing at the
    local server."""
    text = (FIXTURES.parent / "europepmc" / "search_cancer_core.json").read_text(encoding="utf-8")
    answer = json.loads(text.replace("https://", f"{server.url}/"))
    results = [r for r in answer["resultList"]["result"] if r.get("pmid") == pmid]
    return {**answer, "hitCount": len(results), "resultList": {"result": results}}


def serve_pdf(server: ReplayServer, path: str) -> None:
    server.add(path, Reply(200, PDF_BYTES, headers={"Content-Type": "application/pdf"}))

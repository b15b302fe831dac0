"""check_citations reads the citing sentence, over /mcp with the MCP SDK's client, on a
library of real ACL Anthology records without PDFs (tests/fixtures/acl/citecheck_claims.jsonl:
Edunov et al. 2018 and 2019, three Sennrich et al. 2016 papers, the last without abstracts):
a citation with the wrong year that names another paper of its author, a sentence adverb in
front of invented names, and an author-year marker three papers fit.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

RECORDS = Path(__file__).resolve().parents[1] / "fixtures" / "acl" / "citecheck_claims.jsonl"
BACK_TRANSLATION = "Understanding Back-Translation at Scale"
MONOLINGUAL = "Improving Neural Machine Translation Models with Monolingual Data"


def manage(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [PYTHON, "manage.py", *args], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    directory = tmp_path_factory.mktemp("citecheck-claims-kb")
    with server_database("mcp_citeclaims") as database_url:
        env = {
            name: value
            for name, value in base_env(directory, database_url).items()
            if name not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
        }
        manage(env, "migrate", "--verbosity", "0")
        manage(env, "import_jsonl", str(RECORDS))
        with running_server(KnowledgeBase(directory, env)) as live:
            yield live


async def check(server: LiveServer, text: str) -> list[dict[str, Any]]:
    async with mcp_client(server.mcp_url) as client:
        result = await client.call_tool("check_citations", {"text": text, "engines": "local"})
    data = tool_data(result)
    assert data is not None, result
    return list(data["citations"])


def title_of(brief: dict[str, Any]) -> str:
    return re.split(r"(?:\d{4}|n\.d\.)\. ", str(brief["cite"]), maxsplit=1)[1]


async def test_a_wrong_year_naming_another_paper_of_the_author_is_reported(
    server: LiveServer,
) -> None:
    (citation,) = await check(
        server,
        "Back-translating hundreds of millions of monolingual target sentences, with sampled "
        "or noised synthetic source sentences, improves translation quality "
        "(Edunov et al., 2019).",
    )
    assert citation["status"] == "exists"
    assert title_of(citation["paper"]) == BACK_TRANSLATION
    assert citation["paper"]["cite"].startswith("Edunov et al. 2018")
    assert citation["metadata"] == ["year"]
    (flag,) = [flag for flag in citation["flags"] if flag["flag"] == "wrong_paper"]
    assert flag["cited"]["cite"].startswith("Edunov et al. 2019. Pre-trained language model")
    assert flag["fit"] < citation["fit"]
    assert citation["support"] == "no_pdf"


async def test_the_right_citation_of_a_paper_without_pdf_is_not_flagged(
    server: LiveServer,
) -> None:
    (citation,) = await check(
        server,
        "Back-translating hundreds of millions of monolingual target sentences, with sampled "
        "or noised synthetic source sentences, improves translation quality "
        "(Edunov et al., 2018).",
    )
    assert (citation["status"], citation["metadata"]) == ("exists", "ok")
    assert title_of(citation["paper"]) == BACK_TRANSLATION
    assert "flags" not in citation


async def test_a_sentence_adverb_is_not_taken_for_an_author(server: LiveServer) -> None:
    citations = await check(
        server,
        "Finally, Quillfeather and Brackwater (2021) found that honeybees dream in colour. "
        "However, Sennrich, Haddow and Birch (2016) translate rare words with subword units.",
    )
    invented, sennrich = citations
    assert invented["key"] == "quillfeather|2021"
    assert invented["status"] == "unresolved"
    assert sennrich["key"] == "sennrich|2016"
    assert title_of(sennrich["paper"]) == (
        "Neural Machine Translation of Rare Words with Subword Units"
    )


async def test_the_sentence_picks_one_of_several_papers_of_an_author_and_year(
    server: LiveServer,
) -> None:
    picked, unclear = await check(
        server,
        "Back-translated monolingual data improves neural machine translation "
        "(Sennrich et al., 2016). Neural machine translation has made fast progress "
        "(Sennrich et al., 2016).",
    )
    assert picked["status"] == "exists"
    assert title_of(picked["paper"]) == MONOLINGUAL
    assert picked["picked"]["among"] == 3
    assert picked["picked"]["fit"] - picked["picked"]["next"] >= 0.15
    assert "flags" not in picked
    assert unclear["status"] == "ambiguous", unclear
    fits = [candidate["fit"] for candidate in unclear["candidates"]]
    assert fits == sorted(fits, reverse=True) and len(fits) == 3

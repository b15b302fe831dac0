"""The library of the ranking-consistency tests, and what the in-process interfaces show.

Run in a subprocess with the server's environment (RESEARCH_DIRECTORY / DATABASE_URL), so
it reads and writes the database the server under test serves:

    python tests/mcp/ranking_library.py seed
        imports the 300-paper ACL sample, makes a project of every 15th paper, a staff
        user and an API token; prints {"project", "token", "papers": {acl id: paper_id}}.
    python tests/mcp/ranking_library.py probe < requests.json
        for each request {"query", "filters"} (filters: {"year": "A-B"} or {}), the
        paper_ids in the order each interface that is not reached over HTTP shows them:
        the admin's Paper list, its autocomplete, the library picker and the project
        page (all through Django's test client, signed in as staff), the review's search
        step and a saved search's run; prints a JSON list of {interface: [ids]}.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from core.bootstrap import prepare_knowledge_base  # noqa: E402
from papers.models import Paper  # noqa: E402

SAMPLE = ROOT / "tests" / "fixtures" / "acl" / "acl_sample300.jsonl"
STAFF = "ranker"
ROW_ID = re.compile(r'name="_selected_action" value="(\d+)"')
# The searched Paper list's titles, each a link to its paper's reading page.
READ_LINK = re.compile(r'class="result-title" href="/admin/papers/paper/(\d+)/read/"')


def seed() -> dict[str, Any]:
    from projects.services import project_add_papers, project_create
    from research_site.tokens import api_token_create

    prepare_knowledge_base(create_admin=False)
    call_command("import_jsonl", str(SAMPLE), "--no-progress", stdout=io.StringIO())
    papers = {
        value: paper_id
        for paper_id, value in Paper.objects.filter(identifiers__scheme="acl").values_list(
            "pk", "identifiers__value"
        )
    }
    project = project_create(name="Ranking", description="Every 15th paper.")
    project_add_papers(project=project, paper_ids=sorted(papers.values())[::15])
    get_user_model().objects.create_superuser(STAFF, "ranker@example.org", "not-used")
    _, secret = api_token_create(user=get_user_model().objects.get(username=STAFF), name="ranking")
    return {"project": project.pk, "token": secret, "papers": papers}


def _rows(client: Client, url: str, params: dict[str, str]) -> list[int]:
    response = client.get(url, params)
    assert response.status_code == 200, (url, response.status_code)
    return [int(pk) for pk in ROW_ID.findall(response.content.decode())]


def probe(requests: list[dict[str, Any]]) -> list[dict[str, list[int]]]:
    from projects.models import Project
    from projects.review.planning import Plan
    from projects.review.searching import search_gather
    from projects.watch import services as watch

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(username=STAFF))
    project = Project.objects.get(name="Ranking")
    captured: list[list[int]] = []
    remember = watch._new_and_remember

    def capturing(search: Any, run: Any, found_ids: list[int]) -> list[int]:
        captured.append(list(found_ids))
        return remember(search, run, found_ids)

    watch._new_and_remember = capturing  # what the run found, in its order
    shown = []
    for number, request in enumerate(requests):
        query, year = request["query"], request["filters"].get("year", "")
        low, _, high = year.partition("-")
        params = {"q": query, **({"year": year} if year else {})}
        listed = client.get("/admin/papers/paper/", params).content.decode()
        found = {
            "admin": [int(pk) for pk in ROW_ID.findall(listed)],
            "admin_titles": [int(pk) for pk in READ_LINK.findall(listed)],
            "picker": _rows(client, f"/admin/projects/project/{project.pk}/papers/add/", params),
            "project": _rows(client, f"/admin/projects/project/{project.pk}/papers/", params),
        }
        if not year:
            response = client.get(
                "/admin/autocomplete/",
                {"app_label": "papers", "model_name": "paperpdf", "field_name": "paper",
                 "term": query},
            )  # fmt: skip
            found["autocomplete"] = [int(item["id"]) for item in response.json()["results"]]
        plan = Plan(
            queries=[query], engines=["local"], date_from=low or None, date_to=high or None,
            criteria=[],
        )  # fmt: skip
        gathered = search_gather(plan=plan, max_results=10, keep_going=lambda: True)
        found["review"] = [candidate.paper_id for candidate in gathered.candidates]
        search, _ = watch.saved_search_save(
            name=f"ranking-{number}", query=query, engines=["local"], max_results=10,
            filters=request["filters"],
        )  # fmt: skip
        watch.saved_search_run(search=search)
        found["saved_search"] = captured.pop()
        shown.append(found)
    return shown


if __name__ == "__main__":
    if sys.argv[1] == "seed":
        print(json.dumps(seed()))
    else:
        print(json.dumps(probe(json.load(sys.stdin))))

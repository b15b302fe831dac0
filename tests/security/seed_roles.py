"""Seed a knowledge base for the project-role tests and print what it holds as JSON.

The collection-scope tests' library (seed_scope.py: "NLP Reading" holding a PDF with an
annotation, a summary, a finished review, a saved search and an alert, each with a marker
text) where "NLP Reading" is private: `olga` owns it, `eddie` edits, `sam` screens,
`vera` views, and `bob` is no member. "Vision" has no members (open). Each user has a
write-scoped API token. Throwaway reviews and saved searches, one per user, are there for
the tools that remove them. Run in a subprocess with the server's environment; with
SCOPE_SEED_DATA (what seed_scope.py printed) on a copy of seed_scope.py's knowledge base.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.security import seed_scope

USERS = {"owner": "olga", "editor": "eddie", "screener": "sam", "viewer": "vera", None: "bob"}


def main() -> None:
    if os.environ.get("SCOPE_SEED_DATA"):  # a copy of seed_scope.py's knowledge base
        data = json.loads(os.environ["SCOPE_SEED_DATA"])
    else:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            seed_scope.main()
        data = json.loads(printed.getvalue().strip().splitlines()[-1])

    from django.contrib.auth.models import User

    from projects.models import Project, ProjectMember, ReviewSession, SavedSearch
    from research_site.tokens import api_token_create

    nlp = Project.objects.get(pk=data["projects"]["nlp"])
    SavedSearch.objects.filter(project=nlp).update(engines=["local"])
    tokens, throwaway_reviews, throwaway_searches = {}, {}, {}
    for role, name in USERS.items():
        user = User.objects.create_user(name, password=f"pw-{name}-0123456789")
        if role is not None:
            ProjectMember.objects.create(project=nlp, user=user, role=role)
        _, tokens[name] = api_token_create(user=user, name="roles", scope="write")
        review = ReviewSession.objects.create(
            query=f"SECRET-REVIEW-QUESTION throwaway {name}", domain="general", max_results=10,
            stage="complete", status="complete", project=nlp,
        )  # fmt: skip
        throwaway_reviews[name] = str(review.pk)
        search = SavedSearch.objects.create(
            name=f"secret-watch-{name}", query="SECRET-WATCH-QUERY", project=nlp,
            schedule="manual", engines=["local"],
        )  # fmt: skip
        throwaway_searches[name] = search.name
    data["users"] = {role or "outsider": name for role, name in USERS.items()}
    data["tokens"] = tokens
    data["throwaway_reviews"] = throwaway_reviews
    data["throwaway_searches"] = throwaway_searches
    data["feed_token"] = SavedSearch.objects.get(name="secret-watch").feed_token
    print(json.dumps(data))


if __name__ == "__main__":
    main()

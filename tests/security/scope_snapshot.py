"""Print, as JSON, everything of the "NLP Reading" project and the papers outside "Vision"
that a scoped client could change: the scope tests compare it before and after.

Run in a subprocess with the server's environment (as seed_scope.py is); with --serve it
stays, and prints a snapshot for each line it reads.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

import django

django.setup()

from papers.models import Paper  # noqa: E402
from projects.models import (  # noqa: E402
    Alert,
    ExtractionForm,
    ExtractionValue,
    Project,
    ProjectPaper,
    ReviewSession,
    SavedSearch,
)


def snapshot() -> dict[str, object]:
    vision = set(
        ProjectPaper.objects.filter(project__name="Vision").values_list("paper_id", flat=True)
    )
    outside = Paper.objects.exclude(pk__in=vision).order_by("pk")
    # What the "Vision" client may legitimately create (its own reviews, searches) is left
    # out; everything else must stay as it was.
    reviews = [
        str(row)
        for row in ReviewSession.objects.order_by("pk").values()
        if row["project_id"] != "vision" and "vision" not in (row.get("collections") or [])
    ]
    taken = {
        "papers": [
            {
                "paper": str(row),
                "keywords": sorted(p.keywords.values_list("name", flat=True)),
                "projects": sorted(p.projects.values_list("id", flat=True)),
                "assets": sorted(p.assets.values_list("kind", "name", "updated_at")),
                "annotations": p.annotations.count(),
            }
            for p in outside
            for row in [Paper.objects.filter(pk=p.pk).values().get()]
        ],
        "projects": [str(row) for row in Project.objects.order_by("pk").values()],
        "reviews": reviews,
        "saved_searches": [
            str(row)
            for row in SavedSearch.objects.exclude(project="vision").order_by("pk").values()
        ],
        "alerts": [
            str(row) for row in Alert.objects.exclude(project="vision").order_by("pk").values()
        ],
        # Extraction forms of anything but "Vision", and values of papers outside it.
        "extraction_forms": [
            str(row)
            for row in ExtractionForm.objects.exclude(project="vision").order_by("pk").values()
        ],
        "extraction_values": [
            str(row)
            for row in ExtractionValue.objects.filter(paper__in=outside).order_by("pk").values()
        ],
    }
    return taken


SERVED = "SNAPSHOT "  # begins each line --serve answers with (anything else is not one)


def main() -> None:
    """One snapshot; with --serve, one for each line read from stdin, each on a new
    database connection (a test asks for many: one process instead of one each)."""
    if "--serve" not in sys.argv:
        print(json.dumps(snapshot(), default=str))
        return
    from django.db import connections

    for _ in sys.stdin:
        print(SERVED + json.dumps(snapshot(), default=str), flush=True)
        connections.close_all()


if __name__ == "__main__":
    main()

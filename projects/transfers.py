"""Moving papers from one project to another (copying is `project_add_papers`)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from core.errors import InvalidInput
from projects.models import Project
from projects.selectors import project_get
from projects.services import project_add_papers, project_remove_papers


@transaction.atomic
def project_move_papers(
    *, source: Project | str, target: Project | str, paper_ids: Sequence[int]
) -> int:
    """Move papers (by paper_id) out of `source` into `target`, both by id or name, in one
    transaction. Papers already in `target` are just removed from `source`; ids not in
    `source` are ignored. Returns how many papers left `source`.

    Raises NotFound for an unknown project and InvalidInput when both are the same.
    """
    origin = source if isinstance(source, Project) else project_get(ref=source)
    destination = target if isinstance(target, Project) else project_get(ref=target)
    if origin.pk == destination.pk:
        raise InvalidInput("The papers are in that project already.", field="project")
    members = list(
        origin.paper_links.filter(paper_id__in=list(paper_ids)).values_list("paper_id", flat=True)
    )
    project_add_papers(project=destination, paper_ids=members)
    return project_remove_papers(project=origin, paper_ids=members)

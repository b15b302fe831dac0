"""The base of the project's management commands."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class ResearchCommand(BaseCommand):
    """Every `manage.py` command of ours (tests/core/test_commands.py keeps it so).

    Django's system checks are not run before each command. They check the project's own
    code (models, admin classes, URLs), which does not change between a user's commands,
    and loading every URL and admin class to check them was half of a small command's
    start: 3 of the 6.4 CPU seconds `reindex_embeddings` took on a 20-paper library.
    The checks still run in the tests (`manage.py check`, tests/core/test_commands.py)."""

    requires_system_checks: list[str] = []  # type: ignore[assignment]

"""The project's management commands: one base (core.commands.ResearchCommand) that skips
Django's system checks before each command, and those checks run here instead."""

from __future__ import annotations

import pytest
from django.core.management import call_command, get_commands, load_command_class

from core.commands import ResearchCommand

OUR_APPS = ("core", "papers", "engines", "projects", "mcp_endpoint", "research_site")


def test_every_command_of_ours_skips_the_system_checks_through_the_one_base() -> None:
    ours = {name: app for name, app in get_commands().items() if app in OUR_APPS}
    assert {"serve", "import_jsonl", "reindex_embeddings", "backup"} <= set(ours)
    for name, app in ours.items():
        command = load_command_class(app, name)
        assert isinstance(command, ResearchCommand), name
        assert command.requires_system_checks == [], name


@pytest.mark.django_db
def test_the_system_checks_find_nothing_wrong_with_the_project() -> None:
    """What the commands no longer check before each run: models, admin classes, URLs,
    templates. A warning counts as a failure here."""
    call_command("check", fail_level="WARNING")

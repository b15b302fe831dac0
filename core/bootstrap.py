"""Preparing a knowledge base before serving: migrations and the first admin account.

Called by `serve` (and therefore by the README's run command), so a fresh directory is
created and an old one is upgraded in place without a separate step.
"""

from __future__ import annotations

import logging
import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from core.knowledge_base import ensure_layout, read_or_create_secret

logger = logging.getLogger(__name__)

ADMIN_PASSWORD_FILE = ".admin_password"  # noqa: S105 - a file name, not a secret


def prepare_knowledge_base(*, create_admin: bool = True) -> None:
    """Create the folder layout, apply pending migrations and make the first admin.

    The admin password is random, kept in <directory>/.admin_password (mode 0600) and
    never logged; only the file's path is printed. Read-only mode changes nothing.
    """
    ensure_layout(settings.RESEARCH_DIRECTORY)
    if settings.MCP_READ_ONLY:
        return
    call_command("migrate", interactive=False, verbosity=0)
    if create_admin:
        _ensure_first_admin()


def _ensure_first_admin() -> None:
    user_model = get_user_model()
    if user_model.objects.filter(is_superuser=True).exists():
        return
    username = os.environ.get("ADMIN_USERNAME", "admin").strip() or "admin"
    password = os.environ.get("ADMIN_PASSWORD", "").strip()
    where = "ADMIN_PASSWORD"
    if not password:
        password = read_or_create_secret(settings.RESEARCH_DIRECTORY, ADMIN_PASSWORD_FILE)
        where = str(settings.RESEARCH_DIRECTORY / ADMIN_PASSWORD_FILE)
    user_model.objects.create_superuser(username=username, email="", password=password)
    logger.warning("Created admin user %r; its password is in %s", username, where)

from django.apps import AppConfig
from django.conf import settings
from django.contrib.auth.signals import user_logged_in


class ResearchSiteConfig(AppConfig):
    name = "research_site"
    verbose_name = "Research MCP"

    def ready(self) -> None:
        # Register every app's Celery tasks in every process (web, command, worker), so the
        # apps' dispatch modules find them by name without importing them (core/tasks.py).
        from research_site.celery import app

        app.autodiscover_tasks(force=True)

        # /mcp accepts this layer's API tokens and OAuth access tokens (core.identity).
        from research_site.identity import register_authenticators

        register_authenticators()

        if settings.MCP_READ_ONLY:
            # django.contrib.auth saves `last_login` on every login: a write the read-only
            # database refuses. (Sessions are signed cookies in this mode: settings.py.)
            user_logged_in.disconnect(dispatch_uid="update_last_login")
            # Admin pages become view-only (every admin is registered by now: the admin
            # app is listed first and its ready() runs autodiscovery).
            from research_site.read_only import restrict_admin

            restrict_admin()

from django.apps import AppConfig


class ResearchSiteConfig(AppConfig):
    name = "research_site"
    verbose_name = "Research MCP"

    def ready(self) -> None:
        # Register every app's Celery tasks in every process (web, command, worker), so the
        # apps' dispatch modules find them by name without importing them (core/tasks.py).
        from research_site.celery import app

        app.autodiscover_tasks(force=True)

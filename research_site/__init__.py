"""Research MCP: the Django project (settings, urls, ASGI/WSGI, Celery app, serve entry)."""

from research_site.celery import app as celery_app

__all__ = ("celery_app",)

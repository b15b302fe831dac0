"""The Django project: settings, urls, ASGI/WSGI, Celery app, CLI, REST API root and tokens.
May import everything; no app imports it (docs/LAYERS.md): it wires the apps together."""

from research_site.celery import app as celery_app

__all__ = ("celery_app",)

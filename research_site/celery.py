"""The Celery app. With no broker configured, tasks run in-process (CELERY_TASK_ALWAYS_EAGER)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

app = Celery("research_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

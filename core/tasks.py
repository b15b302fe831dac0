"""Finding a Celery task by its name, for the apps' dispatch modules.

A service that starts background work enqueues it through its app's `dispatch` module,
which names the task instead of importing its `tasks` module: the tasks call the services,
so importing them back would tie the two into a loop. Every process registers every app's
tasks when Django starts (research_site's AppConfig), so the name always resolves, in a
web process running tasks in-process as much as in a worker. The names are the tasks'
`name=`s, which never change: messages already queued carry them.
"""

from __future__ import annotations

from typing import Any

from celery import current_app


def registered_task(name: str) -> Any:
    """The task registered as `name` (a celery Task: `.delay`, `.apply_async`, `.apply`)."""
    return current_app.tasks[name]

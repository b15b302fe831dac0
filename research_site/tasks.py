"""Operational tasks of the project itself."""

from __future__ import annotations

import os
import socket
from typing import Any

from celery import shared_task


@shared_task(name="research_site.ping", soft_time_limit=5, time_limit=10)
def ping() -> dict[str, Any]:
    """Answer from whichever process runs tasks: shows a worker is alive (or that tasks
    run in-process on the embedded default)."""
    return {"pong": True, "hostname": socket.gethostname(), "pid": os.getpid()}

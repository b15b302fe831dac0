"""The runtime: knowledge-base layout, settings strictness, background tasks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core.env import env_bool, env_int
from core.knowledge_base import SUBDIRECTORIES
from research_site.tasks import ping

ROOT = Path(__file__).resolve().parents[2]


def test_knowledge_base_has_every_subfolder() -> None:
    for name in SUBDIRECTORIES:
        assert (settings.RESEARCH_DIRECTORY / name).is_dir()


@pytest.mark.parametrize("raw", ["maybe", "2", "tru"])
def test_env_bool_rejects_unclear_values(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("SOME_FLAG", raw)
    with pytest.raises(ImproperlyConfigured, match="SOME_FLAG"):
        env_bool("SOME_FLAG", False)


def test_env_int_rejects_words_and_small_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_NUMBER", "ten")
    with pytest.raises(ImproperlyConfigured):
        env_int("SOME_NUMBER", 1)
    monkeypatch.setenv("SOME_NUMBER", "0")
    with pytest.raises(ImproperlyConfigured):
        env_int("SOME_NUMBER", 1, minimum=1)


def test_fresh_directory_is_created_and_migrated_and_old_one_upgraded(tmp_path: Path) -> None:
    """`serve`'s preparation creates the layout, migrates, and makes the first admin; a
    second run on the same directory finds nothing to do and keeps the data."""
    directory = tmp_path / "kb"
    env = {**os.environ, "RESEARCH_DIRECTORY": str(directory), "DATABASE_URL": ""}
    env.pop("REDIS_URL", None)
    script = (
        "import django; django.setup();"
        "from core.bootstrap import prepare_knowledge_base; prepare_knowledge_base();"
        "from papers.models import Paper; from django.contrib.auth.models import User;"
        "print(Paper.objects.count(), User.objects.filter(is_superuser=True).count())"
    )
    run = [sys.executable, "-c", script]
    env["DJANGO_SETTINGS_MODULE"] = "research_site.settings"
    options = {"env": env, "cwd": ROOT, "capture_output": True, "text": True, "timeout": 120}
    first = subprocess.run(run, check=True, **options)  # type: ignore[call-overload]
    assert first.stdout.split() == ["0", "1"]
    assert (directory / "research.db").is_file()
    for name in SUBDIRECTORIES:
        assert (directory / name).is_dir()
    password_file = directory / ".admin_password"
    assert password_file.stat().st_mode & 0o777 == 0o600
    assert password_file.read_text().strip() not in first.stderr  # never logged
    second = subprocess.run(run, check=True, **options)  # type: ignore[call-overload]
    assert second.stdout.split() == ["0", "1"]


def test_tasks_run_in_a_worker_when_a_broker_is_configured() -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        result = ping.delay().get(timeout=5)
        assert result["pid"] == os.getpid()  # the embedded default runs tasks in-process
        return
    if not os.environ.get("CELERY_WORKER_RUNNING"):
        pytest.skip("a broker is configured but no worker was started (use make test-pg)")
    result = ping.delay().get(timeout=30)
    assert result["pong"] is True
    assert result["pid"] != os.getpid()


def test_env_example_lists_every_variable_the_settings_read() -> None:
    root = Path(__file__).resolve().parents[2]
    settings_source = (root / "research_site" / "settings.py").read_text()
    read = set(re.findall(r'env_(?:str|bool|int|list|map)\(\s*"([A-Z_0-9]+)"', settings_source))
    example = (root / ".env.example").read_text()
    listed = set(re.findall(r"^([A-Z_0-9]+)=", example, flags=re.MULTILINE))
    assert read, "no settings found: the pattern is out of date"
    assert read - listed == set()

"""Property-based run of every operation in /api/openapi.json with schemathesis: generated
valid and invalid requests, sent with a write token through the project's own WSGI
application to the test database, must never get a 5xx answer.

One test walks all operations over one small library (a test per operation would set the
library up 26 times); a few examples per operation and mode keep it well under a minute.
Raise SCHEMATHESIS_EXAMPLES locally for a deeper search.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, note, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from research_site.wsgi import application
from tests.api.conftest import Library

EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "10"))

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def keep_test_connection() -> Iterator[None]:
    """As Django's test client does: a request must not close the test's database
    connection, which holds the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_no_operation_answers_5xx(library: Library, write_token: str) -> None:
    # Loaded from the running application, as a client would.
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)
    headers = {"Authorization": f"Bearer {write_token}"}
    failures: dict[str, str] = {}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: Any) -> None:
                note(case.as_curl_command(headers={"Authorization": "Bearer ..."}))
                case.call_and_validate(headers=headers, checks=[not_a_server_error])

            try:
                check()
            except Unsatisfiable:
                assert mode == GenerationMode.NEGATIVE  # nothing to break: no parameters
            except Exception as exc:  # collect every failure, report them together
                failures[f"{operation.label} ({mode.value})"] = str(exc)[:2000]

    assert not failures, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())

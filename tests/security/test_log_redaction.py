"""Secrets never reach the log (research_site/log_redaction.py), at any level."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from research_site.log_redaction import RedactSecrets, redact


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("headers {'authorization': 'Bearer abcdef123456'}", "abcdef123456"),
        ("Authorization: Bearer xyz-987654321", "xyz-987654321"),
        ("token rmcp_AbC123_def456 refused", "rmcp_AbC123_def456"),
        ("GET https://serpapi.com/search?q=x&api_key=SERPKEY123456&num=5", "SERPKEY123456"),
        ("broker redis://:hunter2pass@127.0.0.1:6379/0", "hunter2pass"),
        ("db postgres://me:pgpass99@db/x", "pgpass99"),
    ],
)
def test_credentials_in_log_lines_are_redacted(line: str, secret: str) -> None:
    cleaned = redact(line)
    assert secret not in cleaned
    assert "[redacted]" in cleaned


def test_configured_secrets_are_redacted_wherever_they_appear(settings: Any) -> None:
    settings.MCP_AUTH_TOKEN = "my-long-mcp-token-42"
    record = logging.LogRecord(
        "x", logging.DEBUG, __file__, 1, "client sent %s", ("my-long-mcp-token-42",), None
    )
    assert RedactSecrets().filter(record)
    assert record.getMessage() == "client sent [redacted]"


def test_ordinary_lines_are_left_alone() -> None:
    line = "stdio tools/call search_papers (id 3): ok in 12.5 ms"
    assert redact(line) == line

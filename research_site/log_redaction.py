"""Secrets never reach the log, whatever the level (`--verbose` logs at DEBUG).

A filter on the stderr handler: every record's formatted message has the configured secrets
(MCP_AUTH_TOKEN, SECRET_KEY, the engines' API keys, the admin password), bearer credentials,
REST API tokens (`rmcp_...`), `api_key=`/`key=`/`token=` query values and the passwords of
URLs (`redis://:pw@host`, `postgres://user:pw@host`) replaced with `[redacted]`
(core/redaction.py).
"""

from __future__ import annotations

import logging

from core.redaction import REDACTED, redact

__all__ = ["REDACTED", "RedactSecrets", "redact"]


class RedactSecrets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True

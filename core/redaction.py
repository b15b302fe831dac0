"""Secrets taken out of text shown or logged: the configured secrets (MCP_AUTH_TOKEN,
SECRET_KEY, the engines' API keys, the admin password), bearer credentials, REST API tokens
(`rmcp_...`), `api_key=`/`key=`/`token=` query values and the passwords of URLs
(`redis://:pw@host`, `postgres://user:pw@host`) replaced with `[redacted]`. Used by the log
filter (research_site/log_redaction.py) and wherever an outside error's text is shown to a
person (a saved search's failure alert)."""

from __future__ import annotations

import re

from django.conf import settings

REDACTED = "[redacted]"
SECRET_SETTINGS = (
    "MCP_AUTH_TOKEN",
    "SECRET_KEY",
    "SERP_API_KEY",
    "SEMANTIC_SCHOLAR_API_KEY",
    "OPENALEX_API_KEY",
    "ADMIN_PASSWORD",
    "ZOTERO_API_KEY",
)
_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s'\",]+"),
    re.compile(r"rmcp_[A-Za-z0-9_\-]+"),
    re.compile(r"(?i)((?:api_?key|key|token|password|secret)=)[^&\s'\"]+"),
    re.compile(r"(?i)((?:authorization|x-api-key)['\"]?\s*[:,]\s*['\"]?)[^'\"\s,}]+"),
    re.compile(r"(://[^/\s:@]*:)[^@/\s]+(@)"),
)


def redact(text: str) -> str:
    for name in SECRET_SETTINGS:
        value = getattr(settings, name, "") if settings.configured else ""
        if isinstance(value, str) and len(value) >= 6:
            text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(
            lambda m: (
                (m.group(1) if m.lastindex else "")
                + REDACTED
                + (m.group(2) if m.lastindex and m.lastindex >= 2 else "")
            ),
            text,
        )
    return text

"""The REST API's error body, which every app's router names in its responses.

`research_site.api_errors` maps exceptions to these answers once, for the whole API; the
apps only document, with `with_errors()`, which error statuses an operation can give.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ninja import Schema
from pydantic import ConfigDict, Field


class ErrorDetail(Schema):
    model_config = ConfigDict(extra="allow")

    code: str = Field(description="Stable, machine-readable: not_found, invalid_input, ...")
    message: str = Field(description="What went wrong and what to do, for people.")


class ErrorOut(Schema):
    error: ErrorDetail


def with_errors(ok: Mapping[int, Any], *statuses: int) -> dict[int, Any]:
    """A `response=` mapping: the success schema(s) plus the error answers an operation can
    give. 400 (bad input), 401 (no credentials) and 500 are possible everywhere."""
    return {**ok, **{status: ErrorOut for status in sorted({400, 401, 500, *statuses})}}

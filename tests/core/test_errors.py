"""Which database errors mean "the database went away, try again" (database_unavailable)
and which remain bugs; the fault tests (tests/faults/) show the whole path on a real
PostgreSQL restart."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
from django.db import InterfaceError, OperationalError

from core.errors import database_unavailable


def django_error(cause: BaseException, kind: type[Exception] = OperationalError) -> Exception:
    """An error as Django's backends raise it: theirs, caused by the driver's."""
    error = kind(str(cause))
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    "cause",
    [
        psycopg.OperationalError("connection failed: Connection refused"),  # no SQLSTATE
        psycopg.OperationalError("consuming input failed: server closed the connection"),
        psycopg.errors.lookup("57P01")("terminating connection due to administrator command"),
        psycopg.errors.lookup("57P03")("the database system is starting up"),
        psycopg.errors.lookup("08006")("connection failure"),
        psycopg.errors.lookup("53300")("too many connections"),
        sqlite3.OperationalError("database is locked"),
        sqlite3.OperationalError("unable to open database file"),
    ],
)
def test_connection_level_errors_are_unavailable(cause: BaseException) -> None:
    unavailable = database_unavailable(django_error(cause))
    assert unavailable is not None
    assert unavailable.code == "database_unavailable"
    assert unavailable.details == {"retry_after_seconds": 5}
    assert "Try again" in unavailable.message and str(cause) not in unavailable.message


def test_a_closed_connection_is_unavailable() -> None:
    assert database_unavailable(InterfaceError("connection already closed")) is not None


@pytest.mark.parametrize(
    "error",
    [
        django_error(psycopg.errors.lookup("57014")("canceling statement due to timeout")),
        django_error(sqlite3.OperationalError("no such table: papers_paper")),
        django_error(sqlite3.OperationalError('fts5: syntax error near ""')),
        ValueError("not a database error"),
    ],
)
def test_other_errors_stay_bugs(error: Exception) -> None:
    assert database_unavailable(error) is None

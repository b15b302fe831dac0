"""The engine tests use `replay_server` from tests/conftest.py (shared with the API tests)."""

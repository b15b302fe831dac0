"""Saved searches (README.md, "Saved searches and alerts"): searches run again by hand or on
a schedule, reporting only the papers that are new (services.py), read by selectors.py, run
on time by scheduler.py."""

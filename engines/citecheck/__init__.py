"""Checking a draft's citations: parse.py finds them, resolve.py finds
the papers (library, then engines), checks.py compares metadata and reads retraction
notices, support.py asks the passage index whether the citing sentence is supported;
selectors.py puts them together for the interfaces. docs/CITATION-CHECK.md explains it."""

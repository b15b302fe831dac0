"""Searching the local library (issue 4).

- `types`: the request and result shapes shared by every search mode;
- `fulltext`: ranked full-text search (SQLite FTS5 / PostgreSQL tsvector), snippets, fuzzy;
- `filters`: payload (metadata) filters with glob patterns, keyword search;
- `facets`: top values with paper counts;
- `semantic`: embeddings, the vector index and hybrid fusion;
- `index`: what every write path calls so the indexes follow the library.
"""

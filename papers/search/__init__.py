"""Searching the local library.

The entry point every interface uses is `local` (`local_search` for a page of hits,
`local_search_ids` for the same order as ids): hybrid (BM25 fused with semantic
similarity) for natural-language questions once the library has vectors, else full text.

- `local`: the one ranking entry point (above) and the filters it takes;
- `query`: what a query means (natural language, phrases, prefixes, exclusions,
  AND/OR/NOT; long text read as plain words);
- `analysis`: words to index terms (folding, stop words, stems);
- `postings`, `lexical`: our own BM25 postings and their ranking (threshold algorithm,
  MaxScore, the in-memory posting cache), the same on SQLite and PostgreSQL;
- `native`: the database's own full-text index (FTS5 / tsvector) for boolean, phrase,
  prefix and typo-tolerant matching;
- `fulltext`: full-text search over both (pages, ids, scores);
- `snippets`: the passage where a hit's query words meet;
- `embedding`, `tiers`, `strong_tier`, `vector_index`, `vector_store`: the embedding
  models, their two tiers, and the vectors each process ranks by;
- `semantic`: semantic search and hybrid fusion;
- `warmup`: loading the models when a server starts;
- `filters`, `types`: metadata filters, and the request and result shapes;
- `listings`: the lists that rank by no text (by metadata, keyword, author);
- `facets`: top values with paper counts;
- `admin_search`: the admin lists' search box;
- `api`: the REST endpoints (/api/search);
- `index`, `source`, `vocabulary`: what write paths call to keep the indexes in step, the
  indexed text, the vocabulary of typo tolerance.
"""

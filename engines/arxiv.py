"""arXiv, through the `arxiv` package's Client.

The package builds the query URL, pages through the Atom feed and parses it into
`arxiv.Result`s; this module points it at ARXIV_API_URL, turns its retries and its
3-second pause off (the runner does both, the same way for every engine), gives every
request a timeout (the package sets none) and maps arXiv's answers to PaperRecords and
its failures to the engine errors. arXiv has no citation data and no BibTeX endpoint.

One module because it is one provider's client (each external source has one client
module): the query translation is arXiv's syntax and belongs with the calls that
send it.
"""

from __future__ import annotations

import calendar
import logging
import re
from dataclasses import replace
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import arxiv
import requests
from django.conf import settings

from core.errors import InvalidInput
from engines import http
from engines.base import (
    AUTHOR,
    CATEGORIES,
    DETAILS,
    SEARCH,
    BaseSearchEngine,
    Category,
    EngineError,
    PaperNotFoundAtSource,
    RateLimited,
    SearchRequest,
    SearchResults,
    TransientEngineError,
)
from engines.failures import status_error, transport_error
from papers.schemas import PaperRecord
from papers.search.analysis import STOP_WORDS

logger = logging.getLogger(__name__)

# The API refuses pages larger than this.
MAX_PAGE_SIZE = 2000
# Open-ended date ranges start here: arXiv's first submissions are from August 1991.
ARXIV_START = "199101010000"
_DATE = re.compile(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")
_CATEGORY_ID = re.compile(r"[a-z-]+(?:\.[A-Za-z-]+)?")
# What may prefix an id: 'arXiv:', an abs or pdf URL.
_ID_PREFIX = re.compile(
    r"^(?:arxiv:\s*|https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/)", re.IGNORECASE
)
# New-style ('2104.12255v2') and old-style ('quant-ph/0201082', 'math.CO/0601001') ids.
_ARXIV_ID = re.compile(r"\d{4}\.\d{4,5}(?:v\d+)?|[a-z-]+(?:\.[A-Za-z]{2})?/\d{7}(?:v\d+)?")
# A query already in arXiv's syntax (a field prefix or an upper-case operator) goes as typed.
_ARXIV_SYNTAX = re.compile(
    r"\b(?:ti|au|abs|co|jr|cat|rn|id|all):|(?:^|\s)(?:AND|OR|ANDNOT)(?:\s|$)"
)
_QUERY_TOKEN = re.compile(r'"([^"]*)"|([^\W_](?:[\w.+-]*[^\W_])?)', re.UNICODE)
# Words of a request that say what is wanted, not what it is about.
_REQUEST_WORDS = frozenset(
    """paper papers article articles publication publications preprint preprints work works
    find show list search searching look looking get want need know tell recent latest new
    newest literature published since using via regarding""".split()
)
# "since 2020", "before 2015", "in 2019": a submission-date range, not words to match.
_YEAR_HINT = re.compile(r"\b(since|after|from|before|until|in)\s+((?:19|20)\d{2})\b", re.I)
# More words than this AND-ed together rarely match anything on arXiv: the first ones stay.
MAX_QUERY_WORDS = 8
# arXiv's answer to a bad request is a feed whose only entry carries the reason.
_ERROR_SUMMARY = re.compile(r"<summary>\s*(.*?)\s*</summary>", re.DOTALL)


class ArxivEngine(BaseSearchEngine):
    id = "arxiv"
    name = "arXiv"
    description = (
        "Open-access preprint repository for physics, mathematics, computer science and "
        "related fields; filter by arXiv category and submission date."
    )
    operations = frozenset({SEARCH, AUTHOR, DETAILS, CATEGORIES})
    # ti:, abs:, au:, all:, AND / OR / ANDNOT, quoted phrases.
    query_dialect = "arxiv"
    # arXiv's terms of use: no more than one request every three seconds.
    rate_limit = "1/3 seconds"

    def search(self, request: SearchRequest) -> list[PaperRecord]:
        """Papers matching the query (arXiv query syntax: `ti:`, `au:`, `abs:`, boolean
        operators), filtered by categories and submission dates, by relevance.

        Raises EngineError for a request arXiv rejects, TransientEngineError for 429, 5xx,
        timeouts and dropped connections.
        """
        request = natural_request(request)
        query = _search_query(request.query, request)
        records = self._run(
            query=query,
            sort_by=arxiv.SortCriterion.Relevance,
            offset=request.offset,
            max_results=request.max_results,
        )
        return SearchResults(records, sent=query)  # a question is sent as arXiv's syntax

    def search_by_author(self, author: str, request: SearchRequest) -> list[PaperRecord]:
        """Papers with `author` among their authors (an `au:"..."` phrase), newest first."""
        name = " ".join(author.replace('"', " ").split())
        if not name:
            raise EngineError("An author search needs an author name.")
        query = _search_query(f'au:"{name}"', request)
        records = self._run(
            query=query,
            sort_by=arxiv.SortCriterion.SubmittedDate,
            offset=request.offset,
            max_results=request.max_results,
        )
        return SearchResults(records, sent=query)

    def get_paper_details(self, paper_id: str) -> PaperRecord:
        """The paper with this arXiv id: new ('2104.12255') or old ('quant-ph/0201082')
        style, with or without a version, bare or as 'arXiv:' / abs / pdf URL.

        Raises PaperNotFoundAtSource when arXiv has no such paper and EngineError when it
        rejects the id as malformed.
        """
        arxiv_id = _ID_PREFIX.sub("", paper_id.strip()).removesuffix(".pdf")
        if not _ARXIV_ID.fullmatch(arxiv_id):
            # Checked here, not left to arXiv: the id goes into a request.
            raise EngineError(
                f"{paper_id!r} is not an arXiv id; e.g. 2104.12255 or quant-ph/0201082."
            )
        records = self._run(id_list=[arxiv_id], offset=0, max_results=1)
        if not records:
            raise PaperNotFoundAtSource(f"arXiv has no paper with id {arxiv_id!r}.")
        return records[0]

    def probe_url(self) -> str:
        return str(settings.ARXIV_API_URL)

    def categories(self) -> list[Category]:
        """arXiv's subject categories (the current taxonomy; no network)."""
        return list(TAXONOMY)

    def _run(
        self,
        *,
        query: str = "",
        id_list: list[str] | None = None,
        sort_by: Any = arxiv.SortCriterion.Relevance,
        offset: int,
        max_results: int,
    ) -> list[PaperRecord]:
        """`max_results` papers from `offset`, mapped to records: one request, as the page
        is as large as the answer (the Client asks again only when arXiv sends a short page
        while claiming more results)."""
        page_size = min(max_results, MAX_PAGE_SIZE)
        if page_size <= 0:
            return []
        offset = max(0, offset)
        search = arxiv.Search(
            query=query, id_list=id_list, max_results=offset + page_size, sort_by=sort_by
        )
        client = arxiv.Client(page_size=page_size, delay_seconds=0, num_retries=0)
        client.query_url_format = settings.ARXIV_API_URL + "?{}"
        try:
            with _Session(connect_timeout=self.connect_timeout, timeout=self.timeout) as session:
                # The Client's own session has no timeout and keeps no response to read.
                client._session = session
                results = list(client.results(search, offset=offset))
        except arxiv.HTTPError as exc:
            raise _http_error(exc.status, session.last_response) from exc
        except arxiv.UnexpectedEmptyPageError as exc:
            # arXiv's known flake: a page that should have entries comes back empty.
            raise TransientEngineError("arXiv returned an unexpectedly empty page.") from exc
        except (
            requests.Timeout,
            requests.ConnectionError,
            requests.exceptions.ChunkedEncodingError,
        ) as exc:
            connect, read = http.request_timeouts(self.connect_timeout, self.timeout)
            timeout = connect if isinstance(exc, requests.ConnectTimeout) else read
            raise transport_error(self.name, exc, timeout=timeout) from None
        except requests.RequestException as exc:
            raise EngineError(f"The request to arXiv failed ({type(exc).__name__}).") from exc
        return [record for record in map(_record, results) if record is not None]


class _Session(requests.Session):
    """The session arxiv.Client fetches with: a timeout on every request, and the last
    response kept for its status, Retry-After and error text (arxiv.HTTPError has none)."""

    def __init__(self, *, connect_timeout: float, timeout: float) -> None:
        super().__init__()
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.last_response: requests.Response | None = None

    def request(self, method: str, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", http.request_timeouts(self.connect_timeout, self.timeout))
        self.last_response = None
        self.last_response = super().request(method, url, *args, **kwargs)
        return self.last_response


# --- the query ------------------------------------------------------------------------


def natural_request(request: SearchRequest) -> SearchRequest:
    """The request with its query as arXiv terms (arxiv_terms) and, when it has no date
    filter of its own, the years a question names ("since 2020", "before 2015", "in
    2019") as its submission-date range."""
    text = request.query
    named_from = named_to = None
    if not _ARXIV_SYNTAX.search(text):
        for match in _YEAR_HINT.finditer(text):
            word, year = match[1].lower(), int(match[2])
            if word in ("since", "after", "from"):
                named_from = str(year + 1 if word == "after" else year)
            elif word in ("before", "until"):
                named_to = str(year - 1 if word == "before" else year)
            else:
                named_from = named_to = str(year)
        text = _YEAR_HINT.sub(" ", text)
    date_from, date_to = request.date_from, request.date_to
    if not (date_from or date_to):
        date_from, date_to = named_from, named_to
    return replace(request, query=arxiv_terms(text), date_from=date_from, date_to=date_to)


def arxiv_terms(text: str) -> str:
    """What a user typed, as an arXiv query (plain questions work as well as arXiv syntax).

    A query written in arXiv's syntax (`ti:`, `au:`, `abs:`, `cat:`... or AND / OR /
    ANDNOT) is sent as typed. Otherwise the question's content words are kept (stop
    words and request words such as "papers", "recent" or "find" dropped) and AND-ed,
    each searched in all fields (`all:`), quoted phrases kept as phrases:
    'What are recent papers on "machine translation" with transformers?' becomes
    'all:"machine translation" AND all:transformers'. A single word goes as it is; a
    question made only of stop words keeps its words.
    """
    text = " ".join(text.split())
    if not text or _ARXIV_SYNTAX.search(text):
        return text
    parts: list[str] = []
    every: list[str] = []
    for phrase, word in _QUERY_TOKEN.findall(text):
        if phrase:
            words = phrase.split()
            if words:
                parts.append(f'"{" ".join(words)}"' if len(words) > 1 else words[0])
            continue
        every.append(word)
        if word.lower() not in STOP_WORDS and word.lower() not in _REQUEST_WORDS:
            parts.append(f'"{word}"' if "-" in word else word)
    if not parts:
        parts = every
    parts = list(dict.fromkeys(parts))[:MAX_QUERY_WORDS]
    if len(parts) == 1:
        return parts[0]
    return " AND ".join(f"all:{part}" for part in parts)


def _search_query(terms: str, request: SearchRequest) -> str:
    """`terms` AND the category and submission-date filters, in arXiv's query syntax."""
    filters = []
    if request.categories:
        for category in request.categories:
            if not _CATEGORY_ID.fullmatch(category):
                raise EngineError(f"{category!r} is not an arXiv category id (e.g. cs.CL).")
        alternatives = " OR ".join(f"cat:{category}" for category in request.categories)
        filters.append(alternatives if len(request.categories) == 1 else f"({alternatives})")
    if request.date_from or request.date_to:
        start = _arxiv_time(request.date_from, end=False) if request.date_from else ARXIV_START
        end = (
            _arxiv_time(request.date_to, end=True)
            if request.date_to
            else datetime.now(UTC).strftime("%Y%m%d2359")
        )
        filters.append(f"submittedDate:[{start} TO {end}]")
    if not terms and not filters:
        raise EngineError("An arXiv search needs a query.")
    if not filters:
        return terms
    return " AND ".join([f"({terms})", *filters] if terms else filters)


def _arxiv_time(value: str, *, end: bool) -> str:
    """'2024', '2024-05' or '2024-05-17' as arXiv's YYYYMMDDHHMM: the first minute of the
    period, or its last when `end`."""
    match = _DATE.fullmatch(value.strip())
    if not match:
        raise EngineError(f"Date {value!r} is not YYYY, YYYY-MM or YYYY-MM-DD.")
    year = int(match[1])
    month = int(match[2] or (12 if end else 1))
    try:
        last_day = calendar.monthrange(year, month)[1]
        day = int(match[3] or (last_day if end else 1))
        moment = date(year, month, day)
    except ValueError:
        raise EngineError(f"Date {value!r} does not exist.") from None
    return moment.strftime("%Y%m%d") + ("2359" if end else "0000")


# --- answers ------------------------------------------------------------------------------


def _http_error(status: int, response: requests.Response | None) -> EngineError:
    # A Response with an error status is falsy: compare with None.
    retry_after = (
        _retry_after(response.headers.get("Retry-After")) if response is not None else None
    )
    if status == 429:
        message = "arXiv is rate limiting us (HTTP 429); it asks for one request every 3 s."
        return RateLimited(message, http_status=status, retry_after=retry_after)
    classified = status_error("arXiv", status, "", retry_after=retry_after)
    if classified is not None:
        return classified
    reason = ""
    if response is not None:
        match = _ERROR_SUMMARY.search(response.text)
        reason = f": {' '.join(match[1].split())}" if match else ""
    return EngineError(f"arXiv rejected the request (HTTP {status}){reason}.", http_status=status)


def _retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def _record(result: Any) -> PaperRecord | None:
    """An arxiv.Result as a PaperRecord; None (logged) for an entry that cannot be one."""
    short_id = result.get_short_id()
    dois = (result.doi or "").split()
    categories = list(dict.fromkeys([result.primary_category, *result.categories]))
    metadata: dict[str, Any] = {
        "arxiv_version_id": short_id,
        "primary_category": result.primary_category,
        "updated": result.updated.date().isoformat(),
    }
    if result.comment:
        metadata["comment"] = " ".join(result.comment.split())
    if len(dois) > 1:
        metadata["other_dois"] = dois[1:]
    try:
        return PaperRecord.build(
            title=result.title,
            authors=[
                {"name": author.name, "affiliation": "; ".join(author.affiliation)}
                for author in result.authors
            ],
            year=result.published.year,
            publication_date=result.published.date().isoformat(),
            abstract=result.summary,
            publication_info=result.journal_ref or "",
            doi=dois[0] if dois else None,
            arxiv_id=short_id,
            source=ArxivEngine.id,
            source_id=short_id,
            source_url=result.entry_id,
            pdf_url=result.pdf_url or "",
            categories=categories,
            metadata=metadata,
        )
    except InvalidInput as exc:
        logger.warning("Skipping arXiv entry %s: %s", short_id, exc.message)
        return None


# --- the category taxonomy ----------------------------------------------------------------
# arXiv's active categories with their group, as defined in arxiv-base
# (arxiv/taxonomy/definitions.py, CATEGORIES_ACTIVE) and shown at arxiv.org/category_taxonomy.
# Aliases (cs.NA = math.NA, cs.SY = eess.SY, math.IT = cs.IT, math.MP = math-ph,
# math.ST = stat.TH, q-fin.EC = econ.GN) are listed under both names, as arXiv does.


def _group(group: str, categories: dict[str, str]) -> list[Category]:
    return [Category(id=id_, name=name, group=group) for id_, name in categories.items()]


TAXONOMY: tuple[Category, ...] = (
    *_group("Computer Science", {
        "cs.AI": "Artificial Intelligence",
        "cs.AR": "Hardware Architecture",
        "cs.CC": "Computational Complexity",
        "cs.CE": "Computational Engineering, Finance, and Science",
        "cs.CG": "Computational Geometry",
        "cs.CL": "Computation and Language",
        "cs.CR": "Cryptography and Security",
        "cs.CV": "Computer Vision and Pattern Recognition",
        "cs.CY": "Computers and Society",
        "cs.DB": "Databases",
        "cs.DC": "Distributed, Parallel, and Cluster Computing",
        "cs.DL": "Digital Libraries",
        "cs.DM": "Discrete Mathematics",
        "cs.DS": "Data Structures and Algorithms",
        "cs.ET": "Emerging Technologies",
        "cs.FL": "Formal Languages and Automata Theory",
        "cs.GL": "General Literature",
        "cs.GR": "Graphics",
        "cs.GT": "Computer Science and Game Theory",
        "cs.HC": "Human-Computer Interaction",
        "cs.IR": "Information Retrieval",
        "cs.IT": "Information Theory",
        "cs.LG": "Machine Learning",
        "cs.LO": "Logic in Computer Science",
        "cs.MA": "Multiagent Systems",
        "cs.MM": "Multimedia",
        "cs.MS": "Mathematical Software",
        "cs.NA": "Numerical Analysis",
        "cs.NE": "Neural and Evolutionary Computing",
        "cs.NI": "Networking and Internet Architecture",
        "cs.OH": "Other Computer Science",
        "cs.OS": "Operating Systems",
        "cs.PF": "Performance",
        "cs.PL": "Programming Languages",
        "cs.RO": "Robotics",
        "cs.SC": "Symbolic Computation",
        "cs.SD": "Sound",
        "cs.SE": "Software Engineering",
        "cs.SI": "Social and Information Networks",
        "cs.SY": "Systems and Control",
    }),
    *_group("Economics", {
        "econ.EM": "Econometrics",
        "econ.GN": "General Economics",
        "econ.TH": "Theoretical Economics",
    }),
    *_group("Electrical Engineering and Systems Science", {
        "eess.AS": "Audio and Speech Processing",
        "eess.IV": "Image and Video Processing",
        "eess.SP": "Signal Processing",
        "eess.SY": "Systems and Control",
    }),
    *_group("Mathematics", {
        "math.AC": "Commutative Algebra",
        "math.AG": "Algebraic Geometry",
        "math.AP": "Analysis of PDEs",
        "math.AT": "Algebraic Topology",
        "math.CA": "Classical Analysis and ODEs",
        "math.CO": "Combinatorics",
        "math.CT": "Category Theory",
        "math.CV": "Complex Variables",
        "math.DG": "Differential Geometry",
        "math.DS": "Dynamical Systems",
        "math.FA": "Functional Analysis",
        "math.GM": "General Mathematics",
        "math.GN": "General Topology",
        "math.GR": "Group Theory",
        "math.GT": "Geometric Topology",
        "math.HO": "History and Overview",
        "math.IT": "Information Theory",
        "math.KT": "K-Theory and Homology",
        "math.LO": "Logic",
        "math.MG": "Metric Geometry",
        "math.MP": "Mathematical Physics",
        "math.NA": "Numerical Analysis",
        "math.NT": "Number Theory",
        "math.OA": "Operator Algebras",
        "math.OC": "Optimization and Control",
        "math.PR": "Probability",
        "math.QA": "Quantum Algebra",
        "math.RA": "Rings and Algebras",
        "math.RT": "Representation Theory",
        "math.SG": "Symplectic Geometry",
        "math.SP": "Spectral Theory",
        "math.ST": "Statistics Theory",
    }),
    *_group("Physics", {
        "astro-ph.CO": "Cosmology and Nongalactic Astrophysics",
        "astro-ph.EP": "Earth and Planetary Astrophysics",
        "astro-ph.GA": "Astrophysics of Galaxies",
        "astro-ph.HE": "High Energy Astrophysical Phenomena",
        "astro-ph.IM": "Instrumentation and Methods for Astrophysics",
        "astro-ph.SR": "Solar and Stellar Astrophysics",
        "cond-mat.dis-nn": "Disordered Systems and Neural Networks",
        "cond-mat.mes-hall": "Mesoscale and Nanoscale Physics",
        "cond-mat.mtrl-sci": "Materials Science",
        "cond-mat.other": "Other Condensed Matter",
        "cond-mat.quant-gas": "Quantum Gases",
        "cond-mat.soft": "Soft Condensed Matter",
        "cond-mat.stat-mech": "Statistical Mechanics",
        "cond-mat.str-el": "Strongly Correlated Electrons",
        "cond-mat.supr-con": "Superconductivity",
        "gr-qc": "General Relativity and Quantum Cosmology",
        "hep-ex": "High Energy Physics - Experiment",
        "hep-lat": "High Energy Physics - Lattice",
        "hep-ph": "High Energy Physics - Phenomenology",
        "hep-th": "High Energy Physics - Theory",
        "math-ph": "Mathematical Physics",
        "nlin.AO": "Adaptation and Self-Organizing Systems",
        "nlin.CD": "Chaotic Dynamics",
        "nlin.CG": "Cellular Automata and Lattice Gases",
        "nlin.PS": "Pattern Formation and Solitons",
        "nlin.SI": "Exactly Solvable and Integrable Systems",
        "nucl-ex": "Nuclear Experiment",
        "nucl-th": "Nuclear Theory",
        "physics.acc-ph": "Accelerator Physics",
        "physics.ao-ph": "Atmospheric and Oceanic Physics",
        "physics.app-ph": "Applied Physics",
        "physics.atm-clus": "Atomic and Molecular Clusters",
        "physics.atom-ph": "Atomic Physics",
        "physics.bio-ph": "Biological Physics",
        "physics.chem-ph": "Chemical Physics",
        "physics.class-ph": "Classical Physics",
        "physics.comp-ph": "Computational Physics",
        "physics.data-an": "Data Analysis, Statistics and Probability",
        "physics.ed-ph": "Physics Education",
        "physics.flu-dyn": "Fluid Dynamics",
        "physics.gen-ph": "General Physics",
        "physics.geo-ph": "Geophysics",
        "physics.hist-ph": "History and Philosophy of Physics",
        "physics.ins-det": "Instrumentation and Detectors",
        "physics.med-ph": "Medical Physics",
        "physics.optics": "Optics",
        "physics.plasm-ph": "Plasma Physics",
        "physics.pop-ph": "Popular Physics",
        "physics.soc-ph": "Physics and Society",
        "physics.space-ph": "Space Physics",
        "quant-ph": "Quantum Physics",
    }),
    *_group("Quantitative Biology", {
        "q-bio.BM": "Biomolecules",
        "q-bio.CB": "Cell Behavior",
        "q-bio.GN": "Genomics",
        "q-bio.MN": "Molecular Networks",
        "q-bio.NC": "Neurons and Cognition",
        "q-bio.OT": "Other Quantitative Biology",
        "q-bio.PE": "Populations and Evolution",
        "q-bio.QM": "Quantitative Methods",
        "q-bio.SC": "Subcellular Processes",
        "q-bio.TO": "Tissues and Organs",
    }),
    *_group("Quantitative Finance", {
        "q-fin.CP": "Computational Finance",
        "q-fin.EC": "Economics",
        "q-fin.GN": "General Finance",
        "q-fin.MF": "Mathematical Finance",
        "q-fin.PM": "Portfolio Management",
        "q-fin.PR": "Pricing of Securities",
        "q-fin.RM": "Risk Management",
        "q-fin.ST": "Statistical Finance",
        "q-fin.TR": "Trading and Market Microstructure",
    }),
    *_group("Statistics", {
        "stat.AP": "Applications",
        "stat.CO": "Computation",
        "stat.ME": "Methodology",
        "stat.ML": "Machine Learning",
        "stat.OT": "Other Statistics",
        "stat.TH": "Statistics Theory",
    }),
)  # fmt: skip

"""Planning a review: the queries, engines, date range, inclusion criteria and whether to
extract data after screening, which a person approves or edits at the `plan` checkpoint.

The planner is rule-based and says why it chose what it chose (`rationale`), so a person
can correct it in one edit. From the question it takes the key terms (question words and
stop words dropped), a year range when the question names one ("since 2019", "2015-2020"),
and, from a small per-domain thesaurus, one variant query with a synonym (as MeSH entry
terms do for PubMed). The domain also orders the engines (arXiv first for physics and CS,
OpenAlex and Crossref first for biomedicine) and adds the usual inclusion criteria. No
network call, no database: it runs the same in a web process and in a worker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from django.utils import timezone

from core.errors import InvalidInput
from engines import search_strings
from engines.registry import LOCAL_ENGINE
from papers.search.query import parse_query

MAX_QUERIES = 5
MAX_EXTERNAL_ENGINES = 4
MAX_BROAD_TERMS = 6
MAX_CRITERIA = 20
MAX_TEXT = 500
DATE_RE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
EDITABLE = (
    "queries", "engines", "date_from", "date_to", "criteria", "snowball", "snowball_direction",
    "extract",
)  # fmt: skip
# What the citation search follows: papers citing the included ones, those they cite, both.
SNOWBALL_DIRECTIONS = ("citing", "references", "both")


@dataclass(frozen=True)
class Domain:
    key: str
    label: str
    engines: tuple[str, ...]  # preferred built-in engines, best first
    recent_years: int | None  # default window; None = no date limit
    criteria: tuple[str, ...]
    synonyms: dict[str, str] = field(default_factory=dict)


DOMAINS: dict[str, Domain] = {
    domain.key: domain
    for domain in (
        Domain(
            "general", "General", ("openalex", "semantic_scholar", "crossref", "google_scholar"),
            None, ("Scholarly publication: journal or conference paper, preprint or book chapter",),
        ),
        Domain(
            "cs", "Computer science",
            ("arxiv", "semantic_scholar", "openalex", "openreview", "google_scholar"),
            10,
            ("Reports a method, system, dataset or empirical evaluation",
             "Peer-reviewed paper or preprint"),
            {"llm": "large language model", "llms": "large language models",
             "large language model": "llm", "large language models": "llms",
             "nlp": "natural language processing", "natural language processing": "nlp",
             "rl": "reinforcement learning", "reinforcement learning": "rl",
             "cnn": "convolutional neural network", "gnn": "graph neural network",
             "transformer": "self-attention", "transformers": "self-attention"},
        ),
        Domain(
            "biomed", "Biology and medicine",
            ("pubmed", "europepmc", "openalex", "semantic_scholar", "crossref", "google_scholar"),
            10,
            ("Peer-reviewed primary study, clinical trial or systematic review",
             "Human or clinically relevant population"),
            {"heart attack": "myocardial infarction", "myocardial infarction": "heart attack",
             "high blood pressure": "hypertension", "hypertension": "high blood pressure",
             "cancer": "neoplasms", "tumor": "neoplasm", "tumour": "neoplasm",
             "covid": "sars-cov-2", "covid-19": "sars-cov-2", "stroke": "cerebrovascular accident",
             "diabetes": "diabetes mellitus", "kidney": "renal"},
        ),
        Domain(
            "physics", "Physics", ("arxiv", "openalex", "crossref", "semantic_scholar"), None,
            ("Peer-reviewed article or arXiv preprint",),
            {"dark matter": "wimp", "qcd": "quantum chromodynamics",
             "quantum chromodynamics": "qcd", "gw": "gravitational waves",
             "gravitational waves": "gravitational radiation"},
        ),
        Domain(
            "math", "Mathematics", ("arxiv", "openalex", "crossref", "semantic_scholar"), None,
            ("Peer-reviewed article or arXiv preprint with proofs or results",),
        ),
        Domain(
            "social", "Social sciences and economics",
            ("openalex", "crossref", "google_scholar", "semantic_scholar"), None,
            ("Empirical study, review or theory paper in a scholarly venue",),
        ),
    )
}  # fmt: skip
DOMAIN_ALIASES = {
    "bio": "biomed", "med": "biomed", "bio/med": "biomed", "biomedical": "biomed",
    "biomedicine": "biomed", "medicine": "biomed", "biology": "biomed", "medical": "biomed",
    "computer science": "cs", "computing": "cs", "mathematics": "math", "maths": "math",
    "economics": "social", "social science": "social", "social sciences": "social",
}  # fmt: skip
# Dropped from the question before searching: question words, function words and the
# words of a year range ("since", "between").
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being between both but by can could did do does doing done during each few for
    from further had has have having how however i if in into is it its itself just me more
    most my no nor not of off on once only or other our out over own same she should since
    so some such than that the their them then there these they this those through to too
    under until up upon us very was we were what when where which while who whom why will
    with within would you your recent recently current latest known know literature review
    reviews overview research paper papers study studies""".split()
)
WORD_RE = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
YEAR = r"(1[89]\d\d|20\d\d)"
YEAR_PATTERNS = (
    (re.compile(rf"\bbetween\s+{YEAR}\s+and\s+{YEAR}\b", re.I), "range"),
    (re.compile(rf"\bfrom\s+{YEAR}\s+(?:to|until|till)\s+{YEAR}\b", re.I), "range"),
    (re.compile(rf"\b{YEAR}\s*[-–]\s*{YEAR}\b"), "range"),
    (re.compile(rf"\b(?:since|after|from)\s+{YEAR}\b", re.I), "from"),
    (re.compile(rf"\b(?:before|until|up to)\s+{YEAR}\b", re.I), "to"),
    (re.compile(rf"\bin\s+{YEAR}\b", re.I), "year"),
)
LAST_YEARS = re.compile(r"\b(?:last|past)\s+(\d{1,2})\s+years\b", re.I)


@dataclass
class Plan:
    """What the search stage runs. `feedback` holds the notes of rejected rounds."""

    queries: list[str]
    engines: list[str]
    date_from: str | None
    date_to: str | None
    criteria: list[str]
    snowball: bool = False
    snowball_direction: str = "citing"
    # Data extraction after screening: the `extract` stage and its checkpoint.
    extract: bool = False
    rationale: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Plan:
        """The plan stored on a session. Raises TypeError/KeyError for a damaged one."""
        plan = cls(**values)
        if not isinstance(plan.queries, list) or not all(isinstance(q, str) for q in plan.queries):
            raise TypeError("plan.queries must be a list of text")
        if not isinstance(plan.engines, list) or not all(isinstance(e, str) for e in plan.engines):
            raise TypeError("plan.engines must be a list of engine ids")
        return plan

    def year_range(self) -> tuple[int | None, int | None]:
        return (
            int(self.date_from[:4]) if self.date_from else None,
            int(self.date_to[:4]) if self.date_to else None,
        )


def domain_key(domain: str) -> str:
    """The canonical domain for a name or alias ('bio/med' -> 'biomed'); InvalidInput
    listing the domains otherwise."""
    name = " ".join(str(domain or "").lower().split()) or "general"
    key = DOMAIN_ALIASES.get(name, name)
    if key not in DOMAINS:
        known = ", ".join([*DOMAINS, "bio/med"])
        raise InvalidInput(f"Unknown domain {domain!r}; use one of {known}.", field="domain")
    return key


def key_terms(text: str) -> str:
    """The words of `text` worth searching for, in order, without repeats."""
    words = [word for word in WORD_RE.findall(_without_dates(text))]
    kept = [word for word in words if word.lower() not in STOP_WORDS]
    return " ".join(dict.fromkeys(kept or words))


def all_of(terms: Sequence[str]) -> str:
    """A query that every one of `terms` must match: joined by AND (one term alone)."""
    return " AND ".join(dict.fromkeys(terms))


def plan_propose(
    *,
    question: str,
    domain: str,
    engines_allowed: Sequence[str],
    engines_default: Sequence[str] = (),
    feedback: Sequence[str] = (),
    engines_down: Mapping[str, str] | None = None,
) -> Plan:
    """The planner's proposal for a question (see the module docstring). `feedback` (notes
    of earlier rejections) adds a query made of the latest note's key terms and the
    question's, and any "quoted phrase" in it as a query of its own. `engines_down`
    (engine -> why: breakers open now, engines.selectors) are left out, and the
    rationale says so; a person may still add them back."""
    spec = DOMAINS[domain_key(domain)]
    rationale: list[str] = []
    focused = key_terms(question)
    if not focused:
        raise InvalidInput("The question has no words to search for.", field="query")
    terms = focused.split()
    # AND, because a query of plain words means "any of them, more is better" in the
    # library's query language (papers/search/query.py) and in most engines: written
    # plainly, the first query would find what the broad one finds.
    strict = all_of(terms)
    queries = [strict]
    rationale.append(f"Query {strict!r}: papers with all of the question's key terms.")
    if len(terms) >= 2:
        broad = " OR ".join(terms[:MAX_BROAD_TERMS])
        queries.append(broad)
        rationale.append(f"Query {broad!r}: any of them, best matches first, for recall.")
    variant = _synonym_variant(focused, spec)
    if variant:
        queries.append(all_of(variant.split()))
        rationale.append(
            f"Query {queries[-1]!r}: all of the terms with a {spec.label.lower()} synonym."
        )
    if feedback:
        note = feedback[-1]
        for phrase in re.findall(r'"([^"]{2,200})"', note)[:2]:
            if WORD_RE.search(phrase):
                queries.append(f'"{phrase.strip()}"')
        extra = key_terms(note)
        if extra:
            combined = " ".join(dict.fromkeys([*extra.split()[:4], *focused.split()]))
            queries.append(combined)
            rationale.append(
                f"Query {combined!r}: any of the note's and the question's key terms, papers "
                "with more of them first."
            )
        rationale.append(f"Revised after the note {note!r}.")
    queries = [q for q in dict.fromkeys(q[:MAX_TEXT] for q in queries) if _parses(q)]
    if not queries:
        raise InvalidInput("The question has no words to search for.", field="query")
    queries = queries[:MAX_QUERIES]

    down = dict(engines_down or {})
    engines = _engines_for(spec, [e for e in engines_allowed if e not in down], engines_default)
    rationale.append(
        "Engines: the library (local), then "
        + (", ".join(engines[1:]) if len(engines) > 1 else "no external engine (none enabled)")
        + f", in the order that suits {spec.label.lower()}."
    )
    if down:
        rationale.append(
            "Left out, known to be down now: " + ", ".join(sorted(down)) + " (edit engines to "
            "ask them anyway)."
        )
    date_from, date_to = _dates(question, spec, rationale)
    criteria = [f"Addresses the question: {question.strip()[:300]}"]
    if date_from or date_to:
        criteria.append(f"Published {date_from or 'any time'} to {date_to or 'now'}")
    criteria.extend(spec.criteria)
    rationale.append(
        "Edit any of this at the plan checkpoint; snowball=true follows citations, "
        "extract=true extracts data from the included studies after screening."
    )
    return Plan(
        queries=queries,
        engines=engines,
        date_from=date_from,
        date_to=date_to,
        criteria=criteria,
        snowball=False,
        rationale=rationale,
        feedback=list(feedback),
    )


def plan_edit(plan: Plan, changes: dict[str, Any], *, engines_allowed: Sequence[str]) -> Plan:
    """The plan with a person's changes applied. Raises ValueError with a message naming
    what is wrong (the caller turns it into its own error)."""
    unknown = sorted(set(changes) - set(EDITABLE))
    if unknown:
        raise ValueError(f"Cannot edit {', '.join(unknown)}; editable: {', '.join(EDITABLE)}.")
    values = plan.as_dict()
    if "queries" in changes:
        values["queries"] = _queries(changes["queries"])
    if "engines" in changes:
        values["engines"] = _engine_list(changes["engines"], engines_allowed)
    for bound in ("date_from", "date_to"):
        if bound in changes:
            value = changes[bound]
            if value is not None and (not isinstance(value, str) or not DATE_RE.match(value)):
                raise ValueError(f"{bound} must be YYYY, YYYY-MM or YYYY-MM-DD, or null.")
            values[bound] = value
    if values["date_from"] and values["date_to"] and values["date_from"] > values["date_to"]:
        raise ValueError("date_from is after date_to.")
    if "criteria" in changes:
        values["criteria"] = _texts(changes["criteria"], "criteria", MAX_CRITERIA)
    if "snowball" in changes:
        if not isinstance(changes["snowball"], bool):
            raise ValueError("snowball must be true or false.")
        values["snowball"] = changes["snowball"]
    if "snowball_direction" in changes:
        if changes["snowball_direction"] not in SNOWBALL_DIRECTIONS:
            raise ValueError(f"snowball_direction must be one of {', '.join(SNOWBALL_DIRECTIONS)}.")
        values["snowball_direction"] = changes["snowball_direction"]
    if "extract" in changes:
        if not isinstance(changes["extract"], bool):
            raise ValueError("extract must be true or false.")
        values["extract"] = changes["extract"]
    values["rationale"] = [*plan.rationale, "Edited at the plan checkpoint."]
    return Plan(**values)


# --- pieces ---------------------------------------------------------------------------------


def _without_dates(text: str) -> str:
    for pattern, _ in YEAR_PATTERNS:
        text = pattern.sub(" ", text)
    return LAST_YEARS.sub(" ", text)


def _synonym_variant(focused: str, spec: Domain) -> str | None:
    lowered = f" {focused.lower()} "
    # Longest terms first, so 'large language models' wins over 'llm' inside it.
    for term in sorted(spec.synonyms, key=len, reverse=True):
        if f" {term} " in lowered:
            variant = lowered.replace(f" {term} ", f" {spec.synonyms[term]} ", 1).strip()
            return variant if variant != focused.lower() else None
    return None


def _parses(query: str) -> bool:
    try:
        parse_query(query)
    except InvalidInput:
        return False
    return True


def _engines_for(spec: Domain, allowed: Sequence[str], defaults: Sequence[str]) -> list[str]:
    """The domain's engines first, then the default set's (a field's own sources, such as
    PubMed, only where the domain names them; `defaults` empty: every allowed engine, as
    for a review started before the default set was kept)."""
    external = [engine for engine in allowed if engine != LOCAL_ENGINE]
    preferred = [engine for engine in spec.engines if engine in external]
    chosen = set(defaults or external)
    others = [engine for engine in external if engine not in preferred and engine in chosen]
    return [LOCAL_ENGINE, *(preferred + others)[:MAX_EXTERNAL_ENGINES]]


def _dates(question: str, spec: Domain, rationale: list[str]) -> tuple[str | None, str | None]:
    now = timezone.now().year
    if match := LAST_YEARS.search(question):
        start = str(now - int(match.group(1)))
        rationale.append(f"Dates: from {start}, as the question asks.")
        return start, None
    for pattern, kind in YEAR_PATTERNS:
        match = pattern.search(question)
        if not match:
            continue
        years = match.groups()
        rationale.append("Dates: as the question names them.")
        if kind == "range":
            low, high = sorted(years)
            return low, high
        if kind == "from":
            return years[0], None
        if kind == "to":
            return None, years[0]
        return years[0], years[0]
    if spec.recent_years:
        start = str(now - spec.recent_years)
        rationale.append(f"Dates: the last {spec.recent_years} years, usual in {spec.label}.")
        return start, None
    rationale.append("Dates: no limit.")
    return None, None


def _queries(value: Any) -> list[str]:
    queries = _texts(value, "queries", MAX_QUERIES)
    if not queries:
        raise ValueError("queries needs at least one query.")
    for query in queries:
        try:
            # A search string (docs/SEARCH-STRINGS.md) is checked in its own language.
            if search_strings.is_search_string(query):
                search_strings.parse(query)
            else:
                parse_query(query)
        except InvalidInput as exc:
            raise ValueError(f"Query {query!r}: {exc.message}") from exc
    return queries


def _engine_list(value: Any, allowed: Sequence[str]) -> list[str]:
    engines = _texts(value, "engines", MAX_EXTERNAL_ENGINES + 1)
    engines = list(dict.fromkeys(engine.lower() for engine in engines))
    if not engines:
        raise ValueError("engines needs at least one engine.")
    refused = [engine for engine in engines if engine not in allowed]
    if refused:
        raise ValueError(
            f"Not available here: {', '.join(refused)}; available: {', '.join(allowed)}."
        )
    return engines


def _texts(value: Any, name: str, most: int) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{name} must be a list of text.")
    items = [" ".join(item.split()) for item in value]
    if any(not item.isprintable() for item in items):
        raise ValueError(f"{name}: control characters are not allowed.")
    if len(items) > most:
        raise ValueError(f"{name}: at most {most}.")
    if any(not item or len(item) > MAX_TEXT for item in items):
        raise ValueError(f"{name}: each must be 1-{MAX_TEXT} characters.")
    return items

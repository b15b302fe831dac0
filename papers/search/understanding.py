"""Query understanding: authors, years and venues named in a natural-language question
turned into filters (when the intent is clear) or left as ranking words (when it is not),
with a note saying what was understood and how to undo it.

    "papers by Vaswani on attention"     author filter Vaswani, words "attention"
    "Neubig et al. 2019 low-resource MT" author filter Neubig, year 2019, words "low-resource MT"
    "ACL 2023 papers on summarization"   venue filter acl, year 2023, words "summarization"
    "dialogue state tracking since 2020" year 2020- , words "dialogue state tracking"
    "Manning dependency parsing"         no filter: Manning is mostly an author's name in the
                                         library, searched as a word (it matches the author
                                         field, and titles with the same stem); a note says
                                         'by Manning' filters
    "Manning" (nothing else)             author filter Manning

Only clear cues make a filter: `by X`, `X et al.`, an author's full name as the library
spells it, a family name that is all the query says, `since|after|before|until|in|from
YEAR`, `YEAR-YEAR`, `between Y and Y`, a venue of the library followed by a year or
introduced as one (`at NAACL`, `EMNLP papers`). Names
are checked against the library's own authors (with papers the client can see) and venues;
a word that the library uses more often as a word than as a name ('Brown' clustering,
'Markov') is never taken for one. Quoted text is never read (quote the words to undo a
reading), nor are queries in the query language (AND/OR/NOT), long texts, or parts the
explicit filters already set. The filters it adds are merged into the request's filters
and go through the same path (`filters.apply_filters`, scope, both databases).
"""

from __future__ import annotations

import datetime
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models.functions import Lower
from django.db.models.lookups import Exact

from core.sql import among_ids, wrote_in_this_transaction
from papers.models import Author, Venue
from papers.scoping import papers_in_scope
from papers.search import analysis, postings
from papers.search import filters as search_filters
from papers.search.query import PLAIN_TEXT_FROM_CHARS
from papers.search.types import SearchFilters

# A capitalised word is read as a bare author name (a boost, never a filter), or a lower-case
# word after "by" as one ('by hand', 'by reading' are not), only when the
# library's titles hold it at most once for every TITLE_SHARE**-1 papers by people of that
# family name: names are rarely in titles ('Manning' 1 title for 255 papers, 'Vaswani' 0
# for 23), topic words are ('Markov' 191 for 26, 'Brown' clustering 8 for 123).
TITLE_SHARE = 0.05
# A family's papers are counted up to this many for that test (titles holding the word at
# most TITLE_SHARE of it decide without the rest).
NAME_PAPERS_COUNTED = 2000
FIRST_YEAR = 1900
# Words whose title mentions over the whole library are kept (per process): a prolific
# family's count reads the title of every paper its term lists ('Wang': 34k at 500k
# papers, about two thirds of a search naming it on PostgreSQL), for every query naming it.
MENTIONS_KEPT = 1024
_MENTIONS: OrderedDict[str, tuple[Any, int, int]] = OrderedDict()  # (generation, count, most)
_mentions_lock = threading.Lock()

_OPERATOR_RE = re.compile(r"(?:^|[\s(])(AND|OR|NOT)(?=[\s()]|$)")
_YEAR_RE = re.compile(r"^(1[89]\d\d|20\d\d)$")
_RANGE_RE = re.compile(r"^(1[89]\d\d|20\d\d)\s*[-\u2013\u2014]\s*(1[89]\d\d|20\d\d|\d\d)$")
_NAME_RE = re.compile(r"^[^\W\d_][\w.'\u2019-]*$")
_EDGE = ",;:?!()[]{}"
_NAME_PUNCTUATION = frozenset(".'\u2019-_")  # what _NAME_RE allows beside letters, digits

_SINCE = {"since", "after", "starting", "post"}
_FROM = {"from"}
_BEFORE = {"before", "until", "till", "through", "pre", "prior"}
_IN = {"in", "during", "of"}
_VENUE_BEFORE = {"at", "in", "from", "to"}
_VENUE_AFTER = {"papers", "paper", "proceedings", "submissions", "publications"}
FILLERS = {
    "papers", "paper", "articles", "article", "publications", "publication", "work", "works",
    "published",
}  # fmt: skip
_TOPIC_CUES = {"about", "on", "regarding", "concerning"}
_NAME_STOPS = {"on", "about", "in", "at", "since", "from", "for", "with", "and", "or", "the"}


@dataclass
class _Token:
    text: str  # as typed, punctuation kept
    word: str  # without edge punctuation
    quoted: bool = False
    used: bool = False


@dataclass(frozen=True)
class Reading:
    """A query read for filters: the text searched, the filters (the request's, with what
    was understood merged in), what was understood, and notes."""

    query: str
    filters: SearchFilters | None
    understood: dict[str, Any] = field(default_factory=dict)  # filters added
    boosts: dict[str, list[str]] = field(default_factory=dict)  # names left as words
    topic: str = ""  # the words left once the filters' words are out
    notes: tuple[str, ...] = ()


def _tokens(query: str) -> list[_Token]:
    tokens: list[_Token] = []
    for index, part in enumerate(query.split('"')):
        if index % 2:
            tokens.append(_Token(f'"{part}"', part, quoted=True))
            continue
        for raw in part.split():
            tokens.append(_Token(raw, raw.strip(_EDGE).rstrip(".")))
    return tokens


def _unpossessive(word: str) -> str:
    return word.removesuffix("'s").removesuffix("\u2019s")


def _filler(word: str) -> bool:
    """A word that says nothing of a topic: a stop word or FILLERS ('papers')."""
    lower = word.lower()
    return not lower or lower in FILLERS or analysis.is_stop_word(lower)


def _title_term(word: str) -> int | None:
    """The postings' term of `word` under which every paper whose title holds it as a word
    (title_mentions' pattern) is listed, or None if one might not be.

    The analyzer splits text into runs of letters and digits, folded to lower-case ASCII,
    stemmed. A title holding the word as a word holds each of the word's runs as one of
    its own, folded alike, when every character of the word folds to ASCII letters or
    digits (so do the case variants the pattern accepts, but for the dotless 'ı', below) or
    is punctuation matched as written. None for other characters ('ø', Greek, where case
    variants fold apart: 'σ', 'ς') and for a word of stop words only (not indexed). Of the
    word's runs, the longest (likely the rarest) names the term.

    Not covered, as the analyzer reads a title, not the word: a character next to the word
    that folding erases or spells out (a combining accent after 'Garci' in a decomposed
    'García'; 'Watson™' read as 'watsontm') and, on PostgreSQL, a dotless 'ı' in the title
    where the word has 'i'. Titles of ASCII are always read alike; the ACL Anthology has 15
    titles of 95,336 with any such character.
    """
    if not all(char in _NAME_PUNCTUATION or _folds_to_ascii(char) for char in word):
        return None
    stems = analysis.stems(word)
    return analysis.term_id(max(stems, key=len)) if stems else None


def _folds_to_ascii(char: str) -> bool:
    folded = analysis.fold(char)
    return folded.isascii() and folded.isalnum()


def _year(word: str) -> int | None:
    if not _YEAR_RE.match(word):
        return None
    year = int(word)
    return year if FIRST_YEAR <= year <= datetime.date.today().year + 1 else None


def _venue_word(word: str) -> tuple[str, str]:
    """(the name, the year glued to it): 'ACL2023' -> ('ACL', '2023'), 'EMNLP' -> ('EMNLP', '')."""
    match = re.match(r"^([A-Za-z*]+)[-']?(\d{2}|\d{4})$", word)
    return (match.group(1), match.group(2)) if match else (word, "")


class _Reader:
    def __init__(self, query: str, filters: SearchFilters | None, scope: Sequence[str] | None):
        self.tokens = _tokens(query)
        self.filters = filters or SearchFilters()
        self.scope = scope
        self.understood: dict[str, Any] = {}
        self.boosts: dict[str, list[str]] = {}
        self.notes: list[str] = []
        self.phrases: list[str] = []  # what was read, for the note
        # Answers of the database for this reading: a title repeats words the name
        # readers ask about (a pair's family, then the word alone).
        self._families: dict[str, bool] = {}
        self._author_papers: dict[str, tuple[int, int | None]] = {}  # (count, counted to)

    # --- helpers ---------------------------------------------------------------------
    def word(self, index: int) -> str:
        if 0 <= index < len(self.tokens) and not self.tokens[index].quoted:
            return self.tokens[index].word
        return ""

    def lower(self, index: int) -> str:
        return self.word(index).lower()

    def free(self, index: int) -> bool:
        return 0 <= index < len(self.tokens) and not self.tokens[index].used

    def use(self, *indexes: int) -> str:
        for index in indexes:
            self.tokens[index].used = True
        return " ".join(self.tokens[i].text.strip(_EDGE) for i in sorted(indexes))

    def papers(self) -> Any:
        return papers_in_scope(self.scope)

    def author_papers(self, name: str, most: int | None = 1) -> int:
        """The papers the client can see by the authors `name` names, counted up to `most`
        (None: all). Most questions need one ('is it anybody's name?'): counting all of a
        prolific family's read every one ('Wang', 34k papers at 500k, ~0.2 s)."""
        known = self._author_papers.get(name)
        if known is not None:
            count, counted_to = known
            # Exact (all counted, or fewer than asked for), or counted far enough.
            if (
                counted_to is None
                or count < counted_to
                or (most is not None and most <= counted_to)
            ):
                return count if most is None else min(count, most)
        count = self._count_author_papers(name, most)
        self._author_papers[name] = (count, most)
        return count

    def _count_author_papers(self, name: str, most: int | None) -> int:
        if "*" in name and not self.family_exists(name.rsplit("*", 1)[-1]):
            # One index probe first: most capitalised pairs ('Neural Translation') name no
            # family. The pattern then reads the authors its first word starts (an index
            # range, filters._led_by), not every author.
            return 0
        if "*" not in name and not search_filters.authors_matching(name).exists():
            # The same for a word or a name: most capitalised words of a title ('Large',
            # 'Language') name nobody, and the count below cost ~5 ms each at 300k papers
            # (three quarters of a title query's time); no author, no paper.
            return 0
        found = search_filters.apply_filters(
            self.papers(), SearchFilters(author=name), scope=self.scope
        )
        if most is None:
            return found.count()
        return int(found.exists()) if most == 1 else found.values("pk")[:most].count()

    def family_exists(self, family: str) -> bool:
        key = family.lower()
        if key not in self._families:
            found = Author.objects.filter(Exact(Lower("family_name"), key)).exists()
            self._families[key] = found
        return self._families[key]

    @staticmethod
    def venues(names: Iterable[str]) -> dict[str, str]:
        """The library's venue series among these names, by short name (lower case): only
        the query's words are looked up (reading every short name cost ~3 ms a query at
        2,600 venues)."""
        wanted = sorted({name.lower() for name in names})
        if not wanted:
            return {}
        found = (
            Venue.objects.exclude(short_name="")
            .alias(short=Lower("short_name"))
            .filter(short__in=wanted)
            .order_by("pk")
            .values_list("short_name", flat=True)
        )
        return {name.lower(): name for name in found}

    def name_like(self, word: str) -> bool:
        """Whether the titles hold `word` rarely enough for a name (TITLE_SHARE of its
        authors' papers). The papers are counted only as far as NAME_PAPERS_COUNTED: when the
        titles are already rare enough for that many, the rest cannot change the answer."""
        papers = self.author_papers(word, NAME_PAPERS_COUNTED)
        if self.title_mentions(word, int(papers * TITLE_SHARE)) <= papers * TITLE_SHARE:
            return True
        if papers < NAME_PAPERS_COUNTED:
            return False  # counted them all
        papers = self.author_papers(word, None)
        return self.title_mentions(word, int(papers * TITLE_SHARE)) <= papers * TITLE_SHARE

    def title_mentions(self, word: str, most: int) -> int:
        """Titles holding `word` as a word, counted up to most + 1. Over the whole library
        the count is kept (`_MENTIONS`) while the postings' generation, which every
        change of a title renews, stays the same."""
        if self.scope is not None or wrote_in_this_transaction(connection):
            return self._count_title_mentions(word, most)
        generation = postings.generation()
        if generation is None:  # no generation row: nothing would say a title changed
            return self._count_title_mentions(word, most)
        with _mentions_lock:
            kept = _MENTIONS.get(word)
        if kept is not None and kept[0] == generation:
            _, count, counted_to = kept
            if count <= counted_to:  # exact
                return min(count, most + 1)
            if most <= counted_to:  # more than counted_to, so more than most
                return most + 1
        count = self._count_title_mentions(word, most)
        with _mentions_lock:
            _MENTIONS[word] = (generation, count, most)
            _MENTIONS.move_to_end(word)
            while len(_MENTIONS) > MENTIONS_KEPT:
                _MENTIONS.popitem(last=False)
        return count

    def _count_title_mentions(self, word: str, most: int) -> int:
        pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
        found = 0
        for titles in self.titles_like(word):
            for title in titles:
                found += bool(pattern.search(title))
                if found > most:
                    return found
        return found

    def titles_like(self, word: str) -> Iterator[Iterable[str]]:
        """The titles that hold `word` (LIKE), in batches. A word of a name is rare in
        titles, and a LIKE reads every title of the library to find the few: so when the
        postings hold every title that has the word as a word (`_title_term`), only the
        papers they list under its term are read, the titles most likely to hold it first."""
        titles = self.papers().filter(title__icontains=word).values_list("title", flat=True)
        term = _title_term(word)
        if term is None:
            yield titles.iterator(chunk_size=500)
            return
        for papers in postings.term_papers(term):
            yield titles.filter(pk__in=among_ids(papers))

    # --- years -------------------------------------------------------------------------
    def years(self) -> None:
        f = self.filters
        if f.year is not None or f.year_from is not None or f.year_to is not None:
            return
        found: tuple[int | None, int | None] | None = None
        for i, token in enumerate(self.tokens):
            if token.used or token.quoted:
                continue
            word = token.word.lower()
            span: list[int] = []
            if match := _RANGE_RE.match(word):
                start, end = int(match.group(1)), match.group(2)
                stop = int(end) if len(end) == 4 else start // 100 * 100 + int(end)
                if start <= stop and _year(str(start)) and _year(str(stop)):
                    found, span = (start, stop), [i]
                    if self.lower(i - 1) in _FROM | _IN | {"between"}:
                        span.append(i - 1)
            elif (
                word in {"between", "from"}
                and (a := _year(self.word(i + 1)))
                and self.lower(i + 2) in {"and", "to", "until"}
                and (b := _year(self.word(i + 3)))
                and a <= b
            ):
                found, span = (a, b), [i, i + 1, i + 2, i + 3]
            elif (year := _year(self.word(i + 1))) and word in _SINCE | _FROM | _BEFORE | _IN:
                if word in _SINCE:
                    found = (year + 1 if word == "after" else year, None)
                elif word in _BEFORE:
                    found = (None, year - 1 if word in {"before", "pre", "prior"} else year)
                else:
                    found = (year, year)
                span = [i, i + 1]
            elif (year := _year(word)) and (
                self.lower(i + 1) in _VENUE_AFTER or self.lower(i - 1) == "al"
            ):
                # '2022 papers on ...', 'Socher et al. 2013' (a citation)
                found, span = (year, year), [i]
            elif (
                word in {"prior", "up"}
                and self.lower(i + 1) == "to"
                and (year := _year(self.word(i + 2)))
            ):
                found = (None, year - 1 if word == "prior" else year)
                span = [i, i + 1, i + 2]
            if found is not None:
                self.set_years(found, self.use(*span))
                return

    def set_years(self, years: tuple[int | None, int | None], text: str) -> None:
        start, end = years
        if start is not None and start == end:
            self.understood["year"] = start
            said = f"published in {start}"
        elif start is not None and end is not None:
            self.understood.update(year_from=start, year_to=end)
            said = f"published {start}-{end}"
        elif start is not None:
            self.understood["year_from"] = start
            said = f"published in {start} or later"
        else:
            self.understood["year_to"] = end
            said = f"published in {end} or earlier"
        self.phrases.append(f"{text!r} as {said}")

    # --- venues ------------------------------------------------------------------------
    def venue(self) -> None:
        if self.filters.venue:
            return
        words = {
            i: _venue_word(token.word)
            for i, token in enumerate(self.tokens)
            if not token.used and not token.quoted
        }
        venues = self.venues(name for name, _ in words.values() if name[:1].isupper())
        for i, (name, glued) in words.items():
            short = venues.get(name.lower())
            if short is None or not name[:1].isupper():
                continue
            year = _year(glued if len(glued) == 4 else "") or (
                _year(f"20{glued}") if len(glued) == 2 else None
            )
            span = [i]
            if year is None and (year := _year(self.word(i + 1))) is not None:
                span.append(i + 1)
            shouted = name.isupper() and len(name) > 1
            introduced = self.lower(i - 1) in _VENUE_BEFORE and shouted
            named = self.lower(i + 1) in _VENUE_AFTER and shouted
            if year is None and not (introduced or named):
                continue
            if self.lower(i - 1) in _VENUE_BEFORE:
                span.append(i - 1)
            text = self.use(*span)
            self.understood["venue"] = short
            said = f"the venue {short}"
            years_set = any(key in self.understood for key in ("year", "year_from", "year_to"))
            if year is not None and not years_set and self._years_free():
                self.understood["year"] = year
                said += f", published in {year}"
            self.phrases.append(f"{text!r} as {said}")
            return

    def _years_free(self) -> bool:
        f = self.filters
        return f.year is None and f.year_from is None and f.year_to is None

    # --- authors -----------------------------------------------------------------------
    def authors(self) -> None:
        if self.filters.author:
            return
        for i, token in enumerate(self.tokens):
            if token.used or token.quoted:
                continue
            word = token.word.lower()
            if word == "by" and self.by(i):
                return
            if word == "et" and self.lower(i + 1).startswith("al") and self.et_al(i):
                return
        if self.full_name():
            return
        self.bare_names()

    def name_words(self, start: int, step: int, most: int = 3) -> list[int]:
        found: list[int] = []
        index = start
        while len(found) < most and self.free(index):
            token = self.tokens[index]
            if token.quoted or not _NAME_RE.match(token.word) or _year(token.word):
                break
            if token.word.lower() in _NAME_STOPS or analysis.is_stop_word(token.word.lower()):
                break
            found.append(index)
            index += step
        return sorted(found)

    def match_name(
        self, indexes: list[int], *, lower_ok: bool, from_end: bool = False
    ) -> tuple[str, list[int]] | None:
        """The longest run of the words (from the first, or back from the last) that names
        an author with papers the client can see."""
        for size in range(len(indexes), 0, -1):
            run = indexes[-size:] if from_end else indexes[:size]
            words = [_unpossessive(self.tokens[i].word) for i in run]
            name = " ".join(words)
            capital = all(w[:1].isupper() for w in words)
            if not capital and not lower_ok:
                continue
            if size > 1:
                # 'Christopher Manning' is also 'Christopher D. Manning'; 'C. Manning' any C.
                name = f"{words[0]}*{words[-1]}"
                if len(words[0].rstrip(".")) == 1:
                    name = f"{words[0][0]}. {words[-1]}"
            if not self.author_papers(name):
                continue
            if not capital and size == 1 and not self.name_like(name):
                continue
            return name, run
        return None

    def set_author(self, name: str, text: str) -> None:
        self.understood["author"] = name
        self.phrases.append(f"{text!r} as the author {name}")

    def by(self, i: int) -> bool:
        found = self.match_name(self.name_words(i + 1, 1), lower_ok=True)
        if found is None:
            return False
        name, run = found
        after = run[-1] + 1
        if self.lower(after) == "et" and self.lower(after + 1).startswith("al"):
            run = [*run, after, after + 1]
        self.set_author(name, self.use(i, *run))
        return True

    def et_al(self, i: int) -> bool:
        found = self.match_name(self.name_words(i - 1, -1, 2), lower_ok=False, from_end=True)
        if found is None:
            return False
        name, run = found
        self.set_author(name, self.use(*run, i, i + 1))
        return True

    def full_name(self) -> bool:
        """Two or three capitalised words that are an author's full name in the library."""
        for i in range(len(self.tokens)):
            run = self.name_words(i, 1)
            if len(run) < 2 or run[0] != i or self.lower(i - 1) in _TOPIC_CUES:
                continue
            for size in range(len(run), 1, -1):
                words = [self.tokens[j].word for j in run[:size]]
                if not all(w[:1].isupper() and not w.isupper() for w in words):
                    continue
                name = f"{words[0]}*{words[-1]}"
                if self.author_papers(name):
                    self.set_author(name, self.use(*run[:size]))
                    return True
        return False

    def bare_names(self) -> None:
        """A capitalised word that the library mostly holds as a family name: left as a
        word (it matches the author field) and said, not a filter; unless it is all the
        query says ('Manning', "Manning's papers"): then it is the author filter, because
        as a word it would also match whatever shares its stem ('Manning': 'man')."""
        names: list[tuple[int, str]] = []
        for i, token in enumerate(self.tokens):
            word = _unpossessive(token.word)
            if token.used or token.quoted or len(word) < 3 or not _NAME_RE.match(word):
                continue
            if not word[:1].isupper() or word.isupper() or self.lower(i - 1) in _TOPIC_CUES:
                continue
            if _filler(word):
                continue
            if self.author_papers(word) and self.name_like(word):
                names.append((i, word))
        rest = [t for i, t in enumerate(self.tokens) if not t.used and i not in dict(names)]
        if len(names) == 1 and all(_filler(t.word) for t in rest):
            index, word = names[0]
            self.set_author(word, self.use(index))
        elif names:
            self.boosts["author"] = [word for _, word in names]

    # --- result ------------------------------------------------------------------------
    def topic(self) -> str:
        kept = [t.text for t in self.tokens if not t.used]
        if self.understood:
            kept = [t for t in kept if t.strip(_EDGE).lower() not in FILLERS]
        return " ".join(kept).strip()


def unmatched_note(reading: Reading) -> str:
    """The note of a search that left out the filters read from its query because no
    paper of the library passes them together with the request's own (local._as_read):
    it names the read ones, and does not say they alone match nothing."""
    return (
        "query: no paper in the library passes the search's filters with those read from "
        "it ("
        + ", ".join(f"{k}={v}" for k, v in reading.understood.items())
        + "), so these results are for the query as typed, without them; pass them as "
        "filters to require them"
    )


def read_query(
    query: str, filters: SearchFilters | None = None, *, scope: Sequence[str] | None = None
) -> Reading:
    """The query read for authors, years and venues (see the module's docstring). A query
    in the query language, a long text or one with nothing understood is returned as it
    came, with the filters as they came."""
    unchanged = Reading(query=query, filters=filters, topic=query)
    if not getattr(settings, "SEARCH_UNDERSTAND", True):
        return unchanged
    if len(query) > PLAIN_TEXT_FROM_CHARS or _OPERATOR_RE.search(query) or query.count('"') % 2:
        return unchanged
    reader = _Reader(query, filters, scope)
    reader.years()
    reader.venue()
    reader.authors()
    notes: list[str] = []
    if reader.boosts.get("author"):
        for name in reader.boosts["author"]:
            notes.append(
                f"query: {name!r} is mostly an author's name in the library, searched as a "
                f"word; write 'by {name}' to keep only their papers"
            )
    if not reader.understood:
        return replace(unchanged, boosts=reader.boosts, notes=tuple(notes))
    topic = reader.topic()
    searched = topic
    if not analysis.words(topic) or all(analysis.is_stop_word(w) for w in analysis.words(topic)):
        # Nothing but filters ("papers by Vaswani"): the names still rank their papers.
        searched = " ".join(t.text for t in reader.tokens if t.used) or query
    merged = search_filters.filters_merge(filters, **reader.understood)
    notes.insert(
        0,
        "query: understood "
        + "; ".join(reader.phrases)
        + " (filters "
        + ", ".join(f"{k}={v}" for k, v in reader.understood.items())
        + "); put words in double quotes to search them as written",
    )
    return Reading(
        query=searched,
        filters=merged,
        understood=dict(reader.understood),
        boosts=reader.boosts,
        topic=topic,
        notes=tuple(notes),
    )

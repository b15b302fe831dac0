"""The full-text query language: parse what a user types, render it for each engine.

    neural "machine translation" AND (bleu OR meteor) NOT speech transl*

- words match anywhere (title, abstract, authors, keywords, venue); several words must
  all match (an implicit AND);
- `"exact phrases"`;
- `AND`, `OR`, `NOT` (upper case; lower-case `and`/`or`/`not` are ordinary words),
  parentheses for grouping; `NOT` excludes (`transformer NOT vision`), so it needs a term
  before it; `AND NOT` reads the same;
- `prefix*` (at least three characters before the star).

Input is parsed into a small AST and rendered from it, never passed through: every word
becomes a quoted FTS5 string (so `{title}:`, `NEAR`, `^` or a stray quote in user input
are plain text), and a PostgreSQL tsquery is composed from `plainto_tsquery` /
`phraseto_tsquery` calls whose text goes in as bound parameters. A malformed query
raises InvalidInput with a hint.

One module because the parser and the renderers share one small AST: a change to the
language changes both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.errors import InvalidInput

OPERATORS = ("AND", "OR", "NOT")
# Longer texts are read as plain words (plain_text): past this length a query is a pasted
# passage, whose punctuation is prose. The longest query-language query of the test sets
# is under 200 characters; the old limit of every interface was 500.
PLAIN_TEXT_FROM_CHARS = 500
# Shorter prefixes expand to thousands of words: slow, and rarely what anyone means.
MIN_PREFIX_CHARS = 3
# A word is made of letters and digits; everything else separates words.
WORD_RE = re.compile(r"\w+", re.UNICODE)


# --- AST -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    text: str
    prefix: bool = False


@dataclass(frozen=True)
class Phrase:
    words: tuple[str, ...]


@dataclass(frozen=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Node, ...]


@dataclass(frozen=True)
class Not:
    include: Node
    exclude: Node


Node = Term | Phrase | And | Or | Not


def _invalid(message: str, hint: str) -> InvalidInput:
    return InvalidInput(message, field="query", hint=hint)


# --- tokens ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    kind: str  # word | phrase | op | lparen | rparen
    value: str


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif char == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise _invalid(
                    "The query has an opening quote without a closing one.",
                    'close the quote: "machine translation"',
                )
            tokens.append(_Token("phrase", text[i + 1 : end]))
            i = end + 1
        elif char == "(":
            tokens.append(_Token("lparen", char))
            i += 1
        elif char == ")":
            tokens.append(_Token("rparen", char))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '"()':
                j += 1
            word = text[i:j]
            tokens.append(_Token("op" if word in OPERATORS else "word", word))
            i = j
    return tokens


# --- parser ----------------------------------------------------------------------------


class _Parser:
    """Recursive descent; precedence NOT > AND (also implicit) > OR, as in FTS5."""

    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> _Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def parse(self) -> Node | None:
        if not self.tokens:
            return None
        node = self.or_expr()
        token = self.peek()
        if token is not None:  # only a stray ')' can stop the expression early
            raise _invalid(
                "The query closes a parenthesis it never opened.",
                "remove the extra ')' or add the matching '('",
            )
        return node

    def or_expr(self) -> Node | None:
        children = [self.and_expr()]
        while (token := self.peek()) is not None and token.kind == "op" and token.value == "OR":
            self.take()
            if self._at_end_of_group():
                raise _invalid("OR needs a term after it.", "write 'bleu OR meteor'")
            children.append(self.and_expr())
        return _combine(Or, children)

    def and_expr(self) -> Node | None:
        if (token := self.peek()) is not None and token.kind == "op" and token.value != "NOT":
            raise _invalid(
                f"{token.value} needs a term before it.", f"write 'bleu {token.value} meteor'"
            )
        children = [self.not_expr()]
        while (token := self.peek()) is not None and token.kind != "rparen":
            if token.kind == "op" and token.value == "OR":
                break
            if token.kind == "op" and token.value == "AND":
                self.take()
                nxt = self.peek()
                if nxt is not None and nxt.kind == "op" and nxt.value == "NOT":
                    # 'a AND NOT b' reads as 'a NOT b'.
                    self.take()
                    children[-1] = self._exclude(children[-1])
                    continue
                if self._at_end_of_group() or (nxt is not None and nxt.kind == "op"):
                    raise _invalid("AND needs a term after it.", "write 'bleu AND meteor'")
            children.append(self.not_expr())
        return _combine(And, children)

    def not_expr(self) -> Node | None:
        token = self.peek()
        if token is not None and token.kind == "op" and token.value == "NOT":
            raise _invalid(
                "NOT needs a term before it: it excludes papers from what the terms before "
                "it match.",
                "write 'transformer NOT vision'",
            )
        node = self.unary()
        while (token := self.peek()) is not None and token.kind == "op" and token.value == "NOT":
            self.take()
            node = self._exclude(node)
        return node

    def _exclude(self, node: Node | None) -> Node | None:
        """After a NOT: the node without what the next term matches."""
        nxt = self.peek()
        if nxt is None or nxt.kind in ("rparen", "op"):
            raise _invalid("NOT needs a term after it.", "write 'transformer NOT vision'")
        excluded = self.unary()
        if node is None:
            raise _invalid("NOT needs a term before it.", "write 'transformer NOT vision'")
        return node if excluded is None else Not(node, excluded)

    def unary(self) -> Node | None:
        token = self.take()
        if token.kind == "lparen":
            if self._at_end_of_group():
                raise _invalid("The query has empty parentheses.", "put terms inside '( )'")
            node = self.or_expr()
            closing = self.peek()
            if closing is None or closing.kind != "rparen":
                raise _invalid(
                    "The query opens a parenthesis without closing it.",
                    "close the parenthesis: (bleu OR meteor)",
                )
            self.take()
            return node
        if token.kind == "phrase":
            words = tuple(WORD_RE.findall(token.value))
            if not words:
                return None
            return Phrase(words) if len(words) > 1 else Term(words[0])
        return _word(token.value)

    def _at_end_of_group(self) -> bool:
        token = self.peek()
        return token is None or token.kind == "rparen"


def _word(raw: str) -> Node | None:
    """A bare word; `c++`, `state-of-the-art` and `o'brien` split at punctuation into a
    phrase of their parts, as the index tokenizes them."""
    prefix = raw.endswith("*")
    words = WORD_RE.findall(raw.rstrip("*"))
    if prefix:
        if not words or len(words[-1]) < MIN_PREFIX_CHARS or raw.rstrip("*").endswith(tuple("-'.")):
            raise _invalid(
                f"'{raw}': a prefix search needs at least {MIN_PREFIX_CHARS} letters before *.",
                "write 'transl*'",
            )
    if not words:
        return None  # punctuation only: nothing to search for
    if len(words) == 1:
        return Term(words[0], prefix=prefix)
    if prefix:
        head = Phrase(tuple(words[:-1])) if len(words) > 2 else Term(words[0])
        return And((head, Term(words[-1], prefix=True)))
    return Phrase(tuple(words))


def _combine(kind: type[And] | type[Or], children: list[Node | None]) -> Node | None:
    present = [child for child in children if child is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    return kind(tuple(present))


def parse_query(text: str) -> Node:
    """The AST of a user query. Raises InvalidInput (with a hint) if it is malformed or
    has nothing to search for."""
    node = _Parser(_tokenize(text)).parse()
    if node is None:
        raise _invalid("The query has no words to search for.", "type at least one word")
    return node


# --- walking ---------------------------------------------------------------------------


def positive_words(node: Node) -> list[str]:
    """The words a matching paper contains (not those after NOT), in query order."""
    if isinstance(node, Term):
        return [node.text]
    if isinstance(node, Phrase):
        return list(node.words)
    if isinstance(node, And | Or):
        return [word for child in node.children for word in positive_words(child)]
    return positive_words(node.include)


def positive_terms(node: Node) -> list[Term]:
    """positive_words as terms, keeping the prefix flag (`transl*`)."""
    if isinstance(node, Term):
        return [node]
    if isinstance(node, Phrase):
        return [Term(word) for word in node.words]
    if isinstance(node, And | Or):
        return [term for child in node.children for term in positive_terms(child)]
    return positive_terms(node.include)


def excluded_parts(node: Node) -> list[Node]:
    """Every part of the query that comes after a NOT."""
    if isinstance(node, Not):
        return [*excluded_parts(node.include), node.exclude]
    if isinstance(node, And | Or):
        return [part for child in node.children for part in excluded_parts(child)]
    return []


def positive_only(node: Node) -> Node:
    """The query without its NOT parts (what fuzzy matching and title pre-filters use)."""
    if isinstance(node, Not):
        return positive_only(node.include)
    if isinstance(node, And):
        return And(tuple(positive_only(child) for child in node.children))
    if isinstance(node, Or):
        return Or(tuple(positive_only(child) for child in node.children))
    return node


# --- SQLite FTS5 -----------------------------------------------------------------------


def _fts5_string(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def to_fts5(node: Node) -> str:
    """An FTS5 MATCH expression; every word is a quoted string."""
    if isinstance(node, Term):
        return _fts5_string(node.text) + (" *" if node.prefix else "")
    if isinstance(node, Phrase):
        return _fts5_string(" ".join(node.words))
    if isinstance(node, And):
        return "(" + " AND ".join(to_fts5(child) for child in node.children) + ")"
    if isinstance(node, Or):
        return "(" + " OR ".join(to_fts5(child) for child in node.children) + ")"
    return f"({to_fts5(node.include)} NOT {to_fts5(node.exclude)})"


# --- PostgreSQL tsquery ----------------------------------------------------------------


def to_tsquery_sql(node: Node, config: str = "english") -> tuple[str, list[str]]:
    """A SQL expression of type tsquery and its parameters.

    `config` is a trusted constant (a text search configuration name), never user input.
    Stop words ('the', 'of') become empty tsqueries, which PostgreSQL drops from && and ||.
    """
    if isinstance(node, Term):
        if node.prefix:
            # \\w+ holds no quote or backslash, so the quoted lexeme cannot break out.
            return f"to_tsquery('{config}', %s)", [f"'{node.text.lower()}':*"]
        return f"plainto_tsquery('{config}', %s)", [node.text]
    if isinstance(node, Phrase):
        return f"phraseto_tsquery('{config}', %s)", [" ".join(node.words)]
    if isinstance(node, And | Or):
        parts = [to_tsquery_sql(child, config) for child in node.children]
        joiner = " && " if isinstance(node, And) else " || "
        return (
            "(" + joiner.join(sql for sql, _ in parts) + ")",
            [param for _, params in parts for param in params],
        )
    include_sql, include_params = to_tsquery_sql(node.include, config)
    exclude_sql, exclude_params = to_tsquery_sql(node.exclude, config)
    return f"({include_sql} && !!{exclude_sql})", [*include_params, *exclude_params]


# --- what a query means: natural language or the query language ------------------------

# `-word` / `-"a phrase"` at the start of a token excludes (a hyphen inside a word,
# 'state-of-the-art', 'IL-6', is part of the word).
_EXCLUSION_RE = re.compile(r'(?:(?<=\s)|(?<=^)|(?<=\())-("[^"]*"|[^\s"()]+)')
_OPERATOR_RE = re.compile(r"(?:(?<=[\s(])|^)(AND|OR|NOT)(?=[\s()]|$)")
_PREFIX_RE = re.compile(r"^\w[\w'-]*\*$")


@dataclass(frozen=True)
class Understood:
    """A query as search uses it.

    - `mode`: "natural" (no operators: any content word may match, more is better) or
      "strict" (AND/OR/NOT: the boolean meaning of the query language);
    - `constraint`: what a result must match (phrases, `prefix*`, exclusions, or the
      whole boolean query), or None when any word may match;
    - `words`: the words that rank results (stop words included; the analyzer drops them);
    - `prefixes`: `prefix*` stems, for highlighting;
    - `notes`: what was changed to make sense of the query (an unbalanced quote).
    """

    mode: str
    constraint: Node | None
    words: tuple[str, ...]
    prefixes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _balanced(text: str, notes: list[str]) -> str:
    """The text with an unpaired double quote and unmatched parentheses dropped."""
    if text.count('"') % 2:
        cut = text.rfind('"')
        text = text[:cut] + " " + text[cut + 1 :]
        notes.append("an unpaired double quote was ignored")
    depth, kept = 0, []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                notes.append("an unmatched ')' was ignored")
                kept.append(" ")
                continue
            depth -= 1
        kept.append(char)
    text = "".join(kept)
    while depth > 0:
        cut = text.rfind("(")
        text = text[:cut] + " " + text[cut + 1 :]
        depth -= 1
        notes.append("an unmatched '(' was ignored")
    return text


def _exclusions(text: str) -> tuple[str, list[Node]]:
    """The text without its `-word` / `-"phrase"` parts, and those parts as nodes."""
    excluded: list[Node] = []

    def take(match: re.Match[str]) -> str:
        raw = match.group(1)
        node = _phrase_node(raw[1:-1]) if raw.startswith('"') else _word(raw)
        if node is not None:
            excluded.append(node)
        return " "

    return _EXCLUSION_RE.sub(take, text), excluded


def _phrase_node(text: str) -> Node | None:
    found = tuple(WORD_RE.findall(text))
    if not found:
        return None
    return Phrase(found) if len(found) > 1 else Term(found[0])


def _natural(text: str) -> tuple[list[Node], list[str], list[str]]:
    """(required phrases and prefixes, ranking words, prefix stems) of a text without
    operators. Parentheses and other punctuation only separate words."""
    required: list[Node] = []
    ranking: list[str] = []
    prefixes: list[str] = []
    for index, part in enumerate(text.split('"')):
        if index % 2:  # inside quotes
            node = _phrase_node(part)
            if node is not None:
                required.append(node)
                ranking += positive_words(node)
            continue
        for token in part.replace("(", " ").replace(")", " ").split():
            if _PREFIX_RE.match(token):
                node = _word(token)  # raises for a prefix shorter than MIN_PREFIX_CHARS
                if node is not None:
                    required.append(node)
                    ranking += [t.text for t in positive_terms(node) if not t.prefix]
                    prefixes += [t.text for t in positive_terms(node) if t.prefix]
                continue
            ranking += WORD_RE.findall(token)
    return required, ranking, prefixes


def understand(text: str) -> Understood:
    """What a query asks for (see Understood). Unbalanced quotes or parentheses are
    dropped with a note, never an error. A text longer than PLAIN_TEXT_FROM_CHARS is
    plain words (see plain_text). Raises InvalidInput (with a hint) for a misused
    operator ('bleu AND'), a prefix shorter than MIN_PREFIX_CHARS, or nothing to search
    for."""
    if len(text) > PLAIN_TEXT_FROM_CHARS:
        return plain_text(text)
    notes: list[str] = []
    rest, excluded = _exclusions(text)
    rest = _balanced(rest, notes)
    if _OPERATOR_RE.search(rest):
        # Operators mean the query language: misusing one is an error with a hint.
        node = parse_query(rest)
        for part in excluded:
            node = Not(node, part)
        return Understood(
            "strict",
            node,
            tuple(t.text for t in positive_terms(node) if not t.prefix),
            tuple(t.text for t in positive_terms(node) if t.prefix),
            tuple(notes),
        )
    required, ranking, prefixes = _natural(rest)
    if not required and not ranking:
        if excluded:
            raise _invalid(
                "The query only excludes words: say what to search for as well.",
                "write 'transformer -vision'",
            )
        raise _invalid("The query has no words to search for.", "type at least one word")
    constraint = _combine(And, list(required))
    if excluded:
        if constraint is None:
            # "Anything but X" is not a search: exclusions narrow what the words find.
            constraint = _combine(Or, [Term(word) for word in dict.fromkeys(ranking)])
        for part in excluded:
            constraint = Not(constraint, part) if constraint is not None else None
    return Understood("natural", constraint, tuple(ranking), tuple(prefixes), tuple(notes))


def plain_text(text: str) -> Understood:
    """A long text (a pasted abstract or a paragraph) as a natural query of its words:
    its quotes, parentheses, hyphens and capitalised AND/OR/NOT are prose, not the query
    language, so nothing is required or excluded. Ranking keeps the text's most
    informative terms (postings.MAX_QUERY_TERMS) and the semantic part embeds it whole."""
    words = tuple(WORD_RE.findall(text))
    if not words:
        raise _invalid("The query has no words to search for.", "type at least one word")
    return Understood("natural", None, words, (), ("long text read as plain words",))


def relaxed(understood: Understood) -> Understood | None:
    """A natural query whose required phrases and prefixes matched nothing, with them as
    plain words (exclusions kept), or None when there is nothing to relax. A query that is
    only a phrase (or prefix) is taken at its word: only quotes inside a question are
    read as emphasis."""
    if understood.mode != "natural" or understood.constraint is None:
        return None
    required = {w.lower() for w in positive_words(positive_only(understood.constraint))}
    if not {w.lower() for w in understood.words} - required:
        return None
    excluded = excluded_parts(understood.constraint)
    words = [*understood.words, *understood.prefixes]
    if not words:
        return None
    constraint: Node | None = None
    if excluded:
        constraint = _combine(Or, [Term(word) for word in dict.fromkeys(words)])
        for part in excluded:
            constraint = Not(constraint, part) if constraint is not None else None
    if constraint == understood.constraint:
        return None
    note = "nothing matched the quoted phrase or prefix as written: its words were searched"
    return Understood("natural", constraint, tuple(words), (), (*understood.notes, note))

"""Highlighter.passage (papers/search/snippets.py) gives the passage the plain definition
gives, on real abstracts and title lines and on edge cases, through both of its paths:
the ASCII one that looks only at the words a query term's words start with, and the one
that splits a text into every word.

The reference below tokenises the whole text, judges every word (folded, then a `prefix*`
or a stem of the query), tries every window and renders every piece: slow and plain.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

import pytest

from papers.search import analysis, snippets
from tests.papers.search.builders import render_window

ACL_SAMPLE = Path(__file__).parents[2] / "fixtures" / "acl" / "acl_sample300.jsonl"
WORD = re.compile(r"[^\W_]+")


def reference_passage(words: list[str], prefixes: list[str], text: str) -> str:
    stems = set(analysis.stems(" ".join(words)))
    folded_prefixes = [analysis.fold(p) for p in prefixes if p]

    def term(word: str) -> str | None:
        folded = analysis.fold(word)
        for prefix in folded_prefixes:
            if folded.startswith(prefix):
                return "prefix:" + prefix
        if analysis.is_stop_word(folded):
            return None
        stem = analysis.stem(folded)
        return stem if stem in stems else None

    tokens = list(WORD.finditer(text))
    terms = [term(token.group()) for token in tokens]
    matched = [(i, t) for i, t in enumerate(terms) if t is not None]
    if not matched:
        return ""
    best, best_key = 0, (-1, -1)
    for start, _ in matched:  # every window starting at a match; the first best one
        inside = [t for i, t in matched if start <= i < start + snippets.SNIPPET_WORDS]
        key = (len(set(inside)), len(inside))
        if key > best_key:
            best, best_key = start, key
    return render_window(text, tokens, terms, best)


def assert_same_passages(words: list[str], prefixes: list[str], texts: list[str]) -> int:
    """Compares every text with one highlighter (its caches carried from text to text, as
    a page of results does); returns how many passages were not empty."""
    highlighter = snippets.Highlighter(words, prefixes)
    shown = 0
    for text in texts:
        expected = reference_passage(words, prefixes, text)
        assert highlighter.passage(text) == expected, (words, prefixes, text)
        shown += bool(expected)
    return shown


def acl_texts() -> tuple[list[str], list[str]]:
    """The sample's abstracts, and its title lines as search results show them."""
    abstracts, lines = [], []
    for line in ACL_SAMPLE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["abstract"]:
            abstracts.append(record["abstract"])
        parts = [record["title"], ", ".join(record["authors"]), record["venue"] or ""]
        lines.append(" — ".join(part for part in parts if part))
    return abstracts, lines


def test_real_abstracts_and_title_lines_give_the_reference_passages() -> None:
    abstracts, lines = acl_texts()
    texts = abstracts + lines
    assert len(abstracts) >= 150 and any(not text.isascii() for text in texts)
    rng = random.Random(19)
    queries: list[tuple[list[str], list[str]]] = [
        (["machine", "translation"], []),
        (["neural", "machine", "translation"], []),
        (["language", "models"], []),
        (["parsing", "dependency"], []),
        (["the", "of", "speech"], []),
        ([], ["summar"]),
        (["evaluation"], ["transl"]),
        (["García", "naïve", "Łukasz"], []),
    ]
    for text in rng.sample(abstracts, 40):  # words of the texts themselves, any case
        chosen = rng.sample(WORD.findall(text), 3)
        queries.append(([w.upper() if rng.random() < 0.2 else w for w in chosen], []))
    shown = sum(assert_same_passages(words, prefixes, texts) for words, prefixes in queries)
    assert shown > 500  # many passages, not only empty ones


EDGE_TEXTS = [
    "Translation",
    "translation.",
    "  Translation  ",
    "The translations, translating; translated: TRANSLATION!",
    "machine-translation and machine_translation and machine2translation and 2translation",
    "Über naïve café: ﬁnancial ﬁne-tuning (ligatures) — translation «quoted» “curly”",
    "Straße, θεωρία, перевод, 翻訳 translation",
    "<script>alert('translation')</script> *bold* _under_ `code` [link](u) \\ back",
    "a\ttranslation\nof\r\nthe\x0bmodel\x0c\x1c\x1fmodels\u00a0with\u2003spaces\u3000end ",
    "translation " + " ".join(f"w{i}" for i in range(60)) + " translation",
    " ".join(f"w{i}" for i in range(29)) + " translation",
    " ".join(f"w{i}" for i in range(30)) + " translation",
    "translation " + " ".join(f"w{i}" for i in range(29)),
    "translation " + " ".join(f"w{i}" for i in range(30)),
    "x " * 40 + "models model modelling translation " + "y " * 40,
    "summary summarize summarization Summarizing SUMMARY summ summa",
    "question? What is this ? translation??",
    "dying lying tying skies happy happily studies agreed possibility relational hopping",
    "possibilities of possibility, gently and gentle ties tying variability variable",
    "1 2 3 2019 x86 a I is the be",
    "\x00\x01 translation \x7f",
    "…translation…",
    "",
    "   ",
    "— — —",
]
EDGE_QUERIES: list[tuple[list[str], list[str]]] = [
    (["translation"], []),
    (["machine", "translation", "models"], []),
    (["naive", "cafe", "financial"], []),
    (["Straße", "θεωρία", "перевод"], []),
    (["die", "lie", "sky", "happy", "study", "agree", "possible", "relate", "hop"], []),
    (["possibility", "gentle", "tie", "variability"], []),
    (["2019", "x86", "is", "the"], []),
    ([], ["summar"]),
    (["model"], ["transl", "über"]),
    (["script", "bold", "code", "link"], []),
    ([], ["ﬁn"]),
    ([], ["\u0301"]),  # folds to nothing: the prefix of every word
    ([], []),
]


@pytest.mark.parametrize(("words", "prefixes"), EDGE_QUERIES)
def test_edge_cases_give_the_reference_passages(words: list[str], prefixes: list[str]) -> None:
    assert_same_passages(words, prefixes, EDGE_TEXTS)


def test_random_texts_of_awkward_pieces_give_the_reference_passages() -> None:
    rng = random.Random(7)
    pieces = (
        "translation translations Translating model models modelling data the of a I "
        "Über naïve ﬁne x86 2019 snake_case machine-translation <b> * ** _ ` [ ] \\ & ? … — "
        "summary summarise θεωρία ß"
    ).split()
    separators = [" ", "  ", ", ", ". ", "\n", "\t", " (", ") ", "-", "_", "\u00a0", "’", ""]
    texts = []
    for _ in range(300):
        parts = [rng.choice(separators)]
        for _ in range(rng.randint(1, 80)):
            parts += [rng.choice(pieces), rng.choice(separators)]
        texts.append("".join(parts))
    for words, prefixes in EDGE_QUERIES[:8]:
        assert_same_passages(words, prefixes, texts)


def test_every_ascii_word_starts_with_the_head_of_its_stem() -> None:
    """The rule the ASCII path rests on (snippets._stem_head), on the installed stemmer:
    every string of up to three letters, words built from the stemmer's own suffixes, and
    every word of the ACL sample."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(p) for n in (1, 2, 3) for p in itertools.product(letters, repeat=n)]
    suffixes = (
        "s es ies ied sses ed edly ing ingly eed eedly y ly li tional enci anci abli entli "
        "izer ization ational ation ator alism aliti alli fulness ousli ousness iveness iviti "
        "biliti bli ogist ogi fulli lessli alize icate iciti ical ful ness ative al ance ence "
        "er ic able ible ant ement ment ent ism ate iti ous ive ize ion e l ll at bl iz bb ying"
    ).split()
    roots = "sk d l t v gener commun past univers organ inter proc succ inn even hop stud rel"
    for root in [*roots.split(), "ab", "po", "ha", "pp", "c", "a"]:
        for one, two in itertools.product(["", *suffixes], repeat=2):
            words.append(root + one + two)
    abstracts, lines = acl_texts()
    words += [w.lower() for text in abstracts + lines for w in WORD.findall(text) if w.isascii()]
    stems = analysis.stem_folded(words)
    wrong = [
        (w, s)
        for w, s in zip(words, stems, strict=True)
        if not w.startswith(snippets._stem_head(s))
    ]
    assert wrong == []


def test_the_ascii_path_s_character_classes_are_the_split_s() -> None:
    """A character is in a word exactly when isalnum() (the ASCII path's test of a
    non-ASCII character), and is whitespace to str.split() exactly when isspace()."""
    for code in range(0x110000):
        char = chr(code)
        assert bool(WORD.fullmatch(char)) == char.isalnum(), hex(code)
        assert (len(f"a{char}a".split()) == 2) == char.isspace(), hex(code)

"""Hostile values and hypothesis strategies shared by the fuzz and targeted tests."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

# A name no legitimate file has: tests look for it outside the knowledge base.
MARKER = "secfuzz"

TRAVERSAL = [
    f"../../{MARKER}",
    f"../../../../../../tmp/{MARKER}",
    f"..\\..\\{MARKER}",
    f"/tmp/{MARKER}",
    f"{MARKER}/../../{MARKER}",
    f"....//....//{MARKER}",
    f"%2e%2e%2f{MARKER}",
    f"C:\\{MARKER}",
    f"~/{MARKER}",
    "../../etc/passwd",
    "/etc/passwd",
    "file:///etc/passwd",
]
FTS_SYNTAX = [
    "NEAR(", "NEAR(a b", '"', 'a "b', "a OR OR", "OR", "*", "a*", "-", "--", "-a", "^a",
    "a AND", "(", ")", "()", "a:b", "title:x", "{a b}", "a + b", "\\", "'", "';--",
    "' OR 1=1 --", "%", "_", "[a-z]*", "?", "a NOT", "NOT NOT", "&&", "||", "a~2",
]  # fmt: skip
UNICODE = ["\x00", "a\x00b", "\ud800", "x\udfffy", "\u202e\u0645\u0631\u062d\u0628\u0627",
           "\U0001f600\U0001f4a9", "\ufeff", "\u200b", "e\u0301", "\uffff", "\U0010ffff",
           "\r\n", "\t", "\x1b[31m"]  # fmt: skip
HOSTILE_STRINGS = [*TRAVERSAL, *FTS_SYNTAX, *UNICODE, "", " ", "x" * 600, "y" * 20000]
HUGE_NUMBERS = [2**31, 2**63, 2**64 + 1, -(2**63) - 1, 10**40, -1, 0, 1e308, -1e308, 0.5]

hostile_text = st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(max_size=40))
numbers = st.one_of(st.sampled_from(HUGE_NUMBERS), st.integers(), st.floats(allow_nan=False))
scalars = st.one_of(st.none(), st.booleans(), numbers, hostile_text)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=12,
)


def nested(message: Any, depth: int) -> bytes:
    """`message` as JSON with its "__DEEP__" value replaced by `depth` nested arrays and
    objects (built as text: the client's own encoder would hit its recursion limit)."""
    opening = "".join('{"a":' if level % 2 else "[" for level in range(depth))
    closing = "".join("}" if level % 2 else "]" for level in reversed(range(depth)))
    return encode(message).replace(b'"__DEEP__"', f"{opening}1{closing}".encode())


def encode(value: Any) -> bytes:
    """JSON as a client sends it: lone surrogates become `\\udXXX` escapes."""
    return json.dumps(value, ensure_ascii=True).encode()

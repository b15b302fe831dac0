"""ACL Anthology identifiers: recognising them and the addresses they imply.

Anthology ids come in two shapes: the current one, `<year>.<venue>-<volume>.<number>`
(`2020.acl-main.1`, `2022.lrec-1.123`, `1952.earlymt-1.1`), and the one used until 2019,
`<letter><yy>-<volume><number>` (`P18-1001`, `W19-5301`). Every paper's page is
`https://aclanthology.org/<id>/` and its PDF `https://aclanthology.org/<id>.pdf`, so the
PDF address of a record that names its Anthology id never has to be asked for.
"""

from __future__ import annotations

import re

ANTHOLOGY = "https://aclanthology.org"
_NEW_ID = r"\d{4}\.[a-z][a-z0-9]*(?:-[a-z0-9]+)*\.\d{1,4}"
_OLD_ID = r"[A-Z]\d{2}-\d{4}"
_ID = re.compile(rf"^(?:{_NEW_ID}|{_OLD_ID})$")
_URL = re.compile(
    rf"^(?:https?://)?(?:www\.)?aclanthology\.org/({_NEW_ID}|{_OLD_ID})(?:\.pdf|\.bib|/)?$",
    re.IGNORECASE,
)


def anthology_id(text: str) -> str | None:
    """The Anthology id in `text` (an id, `acl:<id>`, or an aclanthology.org page, PDF or
    BibTeX address); None when it holds none."""
    value = text.strip()
    if value.lower().startswith("acl:"):
        value = value[4:].strip()
    if _ID.match(value):
        return value
    match = _URL.match(value)
    if match:
        found = match.group(1)
        # The host is case-insensitive, the id is not: new ids are lower case, old upper.
        return found.lower() if found[0].isdigit() else found.upper()
    return None


def anthology_pdf_url(paper_id: str) -> str:
    """The PDF address of an Anthology paper ('' for something that is not an id)."""
    return f"{ANTHOLOGY}/{paper_id}.pdf" if _ID.match(paper_id) else ""


def anthology_page_url(paper_id: str) -> str:
    return f"{ANTHOLOGY}/{paper_id}/" if _ID.match(paper_id) else ""

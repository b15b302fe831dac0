"""PRISMA 2020 flow counts of a review and the flow diagram (issue 23,
projects/review/prisma.py): the counts add up whatever the search found, however its
versions were grouped, split back out and screened (Hypothesis, on the real database and
the real gathering and storing code); the SVG is valid XML with the numbers and escaped
text; the REST endpoints serve both.
"""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from papers.models import Paper, PaperPdf
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.models import ReviewCandidate, ReviewCheckpoint, ReviewSession
from projects.review import prisma, searching, selectors, steps
from projects.review.dedup import duplicate_split, work_groups, works_load
from projects.review.planning import Plan
from projects.review.prisma import prisma_problems, prisma_svg
from research_site.models import ApiToken
from research_site.tokens import api_token_create
from tests.projects.review.builders import assert_counts_add_up

pytestmark = pytest.mark.django_db(transaction=True)

SVG = "{http://www.w3.org/2000/svg}"
ENGINES = ["arxiv", "openalex", "s2"]
# Works of one to three versions: (title, first author, years of the versions).
WORKS = [
    (f"Study {name} of attention in transformers", f"Ann {name.title()}", years)
    for name, years in [
        ("alpha", [2019, 2020]), ("beta", [2018, 2020]), ("gamma", [2021]),
        ("delta", [2015, 2016, 2017]), ("epsilon", [2022]), ("zeta", [2010, 2011]),
        ("eta", [2023]), ("theta", [2012]),
    ]
]  # fmt: skip


@pytest.fixture
def versions(transactional_db: None) -> list[list[int]]:
    """The library: each work's versions (an arXiv preprint, its publication with a DOI and
    a subtitle, a copy with "v2" and no identifier), saved one by one, which the library
    keeps apart; the paper_ids per work. Every other work's last version has a PDF."""
    works = []
    for number, (title, author, years) in enumerate(WORKS):
        ids = []
        for index, year in enumerate(years):
            suffix = ["", ": a replication", " v2"][index]
            values: dict[str, Any] = dict(
                title=title + suffix, authors=[author, "Bo Second"], year=year
            )
            if index == 0 and len(years) > 1:
                values["arxiv_id"] = f"{1900 + number}.{10000 + index}"
            elif index < 2:
                values["doi"] = f"10.1000/work{number}.v{index}"
            ids.append(papers_upsert(records=[PaperRecord.build(**values)]).paper_ids[0])
        works.append(ids)
    every = [pk for ids in works for pk in ids]
    assert len(set(every)) == len(every)
    grouping = work_groups(every, works_load(every))
    assert sorted(map(sorted, grouping.groups)) == sorted(map(sorted, works))
    for paper in Paper.objects.filter(pk__in=[ids[-1] for ids in works[::2]]):
        PaperPdf.objects.create(
            paper=paper, file_name=f"{paper.pk}.pdf", sha256="0" * 64, size=1, page_count=1,
            origin=PaperPdf.Origin.ATTACHED,
        )  # fmt: skip
    return works


def session_at_screen(plan: Plan, max_results: int) -> ReviewSession:
    session = ReviewSession.objects.create(
        query="attention in transformers", domain="general", max_results=max_results,
        stage=ReviewSession.Stage.SCREEN, status=ReviewSession.Status.WAITING,
        plan=plan.as_dict(),
    )  # fmt: skip
    ReviewCheckpoint.objects.create(
        session=session, sequence=1, kind=ReviewCheckpoint.Kind.SCREEN, round=1
    )
    return session


@given(
    data=st.data(),
    max_results=st.integers(1, 20),
    since=st.sampled_from([None, "2012", "2016", "2020"]),
)
@hypothesis_settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_prisma_counts_add_up_whatever_was_found_grouped_split_and_screened(
    versions: list[list[int]], data: st.DataObject, max_results: int, since: str | None
) -> None:
    papers = Paper.objects.in_bulk([pk for ids in versions for pk in ids])
    # What each engine answered, in its order (an engine lists a paper at most once).
    found: dict[int, searching.Found] = {}
    identified: Counter[str] = Counter()
    for engine in ENGINES:
        listed = data.draw(st.lists(st.sampled_from(sorted(papers)), unique=True, max_size=12))
        identified[engine] += len(listed)
        for position, pk in enumerate(listed):
            item = found.setdefault(pk, searching.Found(pk, papers[pk].year, len(found)))
            item.score += 1 / (searching.RRF_K + position + 1)
            item.engines.append(engine)
    sources = {engine: {"asked": 1, "answered": 1} for engine in ENGINES}
    plan = Plan(queries=["q"], engines=ENGINES, date_from=since, date_to=None, criteria=[])
    gathered = searching._ranked(found, identified, sources, {}, [], plan, max_results, known={})
    session = session_at_screen(plan, max_results)
    steps._store_candidates(session, ReviewCandidate.Source.SEARCH, gathered)
    session.identification = {"search": gathered.identification}
    session.save()
    # Versions of one work are never two candidates.
    candidates = set(session.candidates.values_list("paper_id", flat=True))
    for ids in versions:
        assert len(candidates & set(ids)) <= 1
    grouped = list(session.duplicates.values_list("paper_id", flat=True))
    for pk in data.draw(st.lists(st.sampled_from(grouped), unique=True)) if grouped else []:
        duplicate_split(session_id=session.pk, paper=pk)
    rng = random.Random(data.draw(st.integers(0, 2**16)))
    for candidate in session.candidates.all():
        fate = rng.choice(["pending", "included", "excluded"])
        candidate.status = fate
        candidate.reason = (
            rng.choice(["off topic", "", "wrong design"]) if fate == "excluded" else ""
        )
        candidate.save()
    counts = selectors.review_counts(session=session)
    assert_counts_add_up(counts)
    flow = selectors.review_prisma(session=session)
    assert prisma_problems(flow) == []
    databases = flow["databases"]
    assert databases["identified_total"] == sum(identified.values())
    assert databases["versions_grouped"] == session.duplicates.filter(split_at=None).count()
    included = session.candidates.filter(status="included")
    assert databases["not_retrieved"] == included.filter(paper__pdf=None).count()
    assert (
        flow["reports"]
        == included.count()
        + session.duplicates.filter(split_at=None, candidate__status="included").count()
    )
    ET.fromstring(prisma_svg(flow, title=session.query).encode())  # noqa: S314 - our own SVG


def broken(flow: dict[str, Any]) -> list[str]:
    return prisma_problems(flow)


FLOW: dict[str, Any] = {
    "databases": {
        "identified": {"arxiv": 40, "<openalex & co>": 25},
        "identified_total": 65,
        "duplicates_removed": 15,
        "versions_grouped": 4,
        "outside_date_range": 5,
        "over_limit": 3,
        "screened": 42,
        "pending": 2,
        "excluded": 30,
        "excluded_reasons": {"off topic": 20, 'not an "RCT" & <small>': 10},
        "sought": 10,
        "not_retrieved": 3,
    },
    "other_methods": {
        "identified": {"openalex": 12},
        "identified_total": 12,
        "duplicates_removed": 2,
        "versions_grouped": 1,
        "outside_date_range": 0,
        "over_limit": 0,
        "screened": 10,
        "pending": 0,
        "excluded": 7,
        "excluded_reasons": {"off topic": 7},
        "sought": 3,
        "not_retrieved": 1,
    },
    "included": 13,
    "reports": 15,
    "diagram": "review://x/prisma.svg",
}


def test_the_invariants_catch_counts_that_do_not_add_up() -> None:
    assert broken(FLOW) == []
    bad = {**FLOW, "databases": {**FLOW["databases"], "screened": 41}}
    assert broken(bad) == [
        "databases: identified_total = removed + screened",
        "databases: screened = pending + excluded + sought",
    ]
    assert broken({**FLOW, "included": 12}) == ["included = sum(sought)"]
    bad = {**FLOW, "other_methods": {**FLOW["other_methods"], "not_retrieved": 4}}
    assert broken(bad) == ["other_methods: not_retrieved <= sought"]


def svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg.encode())  # noqa: S314 - our own SVG
    assert root.tag == f"{SVG}svg"
    return [text.text or "" for text in root.iter(f"{SVG}text")]


def test_the_diagram_is_valid_svg_in_the_prisma_layout_with_every_number() -> None:
    svg = prisma_svg(FLOW, title="Does <b>sleep</b> & coffee help?")
    texts = svg_texts(svg)
    assert "Does <b>sleep</b> & coffee help?" in texts  # escaped, read back as text
    for heading in (
        "Identification of studies via databases and registers",
        "Identification of studies via other methods",
        "Identification", "Screening", "Included",
    ):  # fmt: skip
        assert heading in texts
    expected = [
        "arxiv (n = 40)", "<openalex & co> (n = 25)", "Total (n = 65)",
        "Duplicate records removed (n = 15)", "  of which other versions grouped (n = 4)",
        "Outside the date range (n = 5)", "Over the result limit (n = 3)",
        "Records screened (n = 42)", "Awaiting a decision (n = 2)",
        "Records excluded (n = 30)", "off topic (n = 20)",
        'not an "RCT" & <small> (n = 10)',
        "Reports sought for retrieval (n = 10)", "Reports not retrieved (n = 3)",
        "openalex (n = 12)", "Records screened (n = 10)", "Records excluded (n = 7)",
        "Reports sought for retrieval (n = 3)", "Reports not retrieved (n = 1)",
        "Studies included in review (n = 13)", "Reports of included studies (n = 15)",
    ]  # fmt: skip
    for line in expected:
        assert line in texts, line
    # The databases column only when there was no citation search.
    alone = {key: value for key, value in FLOW.items() if key != "other_methods"}
    texts = svg_texts(prisma_svg({**alone, "included": 10, "reports": 12}))
    assert "Identification of studies via other methods" not in texts
    assert "Studies included in review (n = 10)" in texts


def test_many_exclusion_reasons_are_summed_beyond_the_sixth() -> None:
    reasons = {f"reason {n}": 10 - n for n in range(9)}
    column = {**FLOW["databases"], "excluded_reasons": reasons, "excluded": sum(reasons.values())}
    texts = svg_texts(prisma_svg({**FLOW, "databases": column}))
    assert "reason 0 (n = 10)" in texts and "reason 5 (n = 5)" in texts
    assert "reason 6 (n = 4)" not in texts
    assert "Other reasons (n = 9)" in texts  # 4 + 3 + 2


def boxes_and_texts(svg: str) -> list[tuple[float, float, list[ET.Element]]]:
    """Each box of the diagram (x, width) with the texts drawn after it, in order."""
    boxes: list[tuple[float, float, list[ET.Element]]] = []
    for element in ET.fromstring(svg.encode()):  # noqa: S314 - our own SVG
        if element.tag == f"{SVG}rect" and element.get("stroke-width") == "1":
            boxes.append((float(element.get("x", 0)), float(element.get("width", 0)), []))
        elif element.tag == f"{SVG}text" and boxes and element.get("xml:space") is None:
            continue
        elif element.tag == f"{SVG}text" and boxes:
            boxes[-1][2].append(element)
    return boxes


def test_long_reasons_and_names_wrap_inside_their_box_and_a_cut_keeps_its_full_text() -> None:
    reason = (
        "about attention in the psychological sense (pupils, birds and readers), not "
        "the self-attention of transformer encoders over long inputs"
    )
    endless = "a reason that goes on " * 12 + "and on"
    column = {
        **FLOW["databases"],
        "identified": {"a_source_with_an_unusually_long_engine_identifier_name": 65},
        "excluded_reasons": {reason: 20, endless: 10},
    }
    svg = prisma_svg({**FLOW, "databases": column}, title="Why? " * 200)
    for x, width, texts in boxes_and_texts(svg):
        for text in texts:
            assert prisma._width(text.text or "") <= width - 2 * prisma.PAD, text.text
            assert float(text.get("x", 0)) == x + prisma.PAD
    texts = svg_texts(svg)
    start = texts.index("Records excluded (n = 30)")
    wrapped = texts[start + 1 : start + 4]
    assert " ".join(line.strip() for line in wrapped) == f"{reason} (n = 20)"
    # Past three lines a reason is cut, its full text the line's title (a tooltip).
    root = ET.fromstring(svg.encode())  # noqa: S314 - our own SVG
    cut = [t for t in root.iter(f"{SVG}text") if t.find(f"{SVG}title") is not None]
    titles = [t.find(f"{SVG}title").text for t in cut]  # type: ignore[union-attr]
    assert f"{' '.join(endless.split())} (n = 10)" in titles
    assert all((t.text or "").endswith("\u2026") for t in cut)
    assert ("Why? " * 200).strip() in titles  # the question above the diagram, cut too
    # Every text the tests above read stays one line: the boxes are wide enough for them.
    assert "  of which other versions grouped (n = 4)" in texts


def test_the_rest_api_serves_the_numbers_and_the_diagram(client: Client) -> None:
    user = User.objects.create_user("reader")
    _, token = api_token_create(user=user, name="read", scope=ApiToken.Scope.READ)
    headers = {"Authorization": f"Bearer {token}"}
    plan = Plan(queries=["q"], engines=["arxiv"], date_from=None, date_to=None, criteria=[])
    session = session_at_screen(plan, 10)
    session.identification = {
        "search": {"identified": {"arxiv": 0}, "identified_total": 0, "duplicates_removed": 0}
    }
    session.save()
    numbers = client.get(f"/api/projects/reviews/{session.pk}/prisma", headers=headers)
    assert numbers.status_code == 200, numbers.content
    flow = numbers.json()
    assert prisma_problems(flow) == [] and flow["included"] == 0
    diagram = client.get(f"/api/projects/reviews/{session.pk}/prisma.svg", headers=headers)
    assert diagram.status_code == 200
    assert diagram["Content-Type"] == "image/svg+xml; charset=utf-8"
    assert "Records screened (n = 0)" in svg_texts(diagram.content.decode())
    for missing in ("9c1b2f0e-0000-4000-8000-000000000000", "not-a-session"):
        answer = client.get(f"/api/projects/reviews/{missing}/prisma.svg", headers=headers)
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "not_found"
    assert client.get(f"/api/projects/reviews/{session.pk}/prisma").status_code == 401


def test_numbers_in_the_diagram_match_the_flow() -> None:
    """Every "(n = ...)" of the diagram is a number of the flow (nothing made up)."""
    numbers = {int(n) for n in re.findall(r"\(n = (\d+)\)", prisma_svg(FLOW))}
    values: set[int] = {FLOW["included"], FLOW["reports"]}
    for column in (FLOW["databases"], FLOW["other_methods"]):
        values |= {v for v in column.values() if isinstance(v, int)}
        values |= set(column["identified"].values()) | set(column["excluded_reasons"].values())
    assert numbers <= values

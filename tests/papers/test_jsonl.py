"""import_jsonl: the ACL format, re-runs, and every error path."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from papers.exports import render_export
from papers.models import Paper, PaperIdentifier
from papers.selectors import with_relations
from projects.models import Project

pytestmark = pytest.mark.django_db

SAMPLE = Path(__file__).parents[1] / "fixtures" / "acl" / "acl_sample300.jsonl"


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_jsonl", *args, "--no-progress", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_acl_sample_imports_with_identifiers_and_authors() -> None:
    out, _ = run(str(SAMPLE))
    assert "300 records" in out
    assert "0 failed" in out
    paper = Paper.objects.get(identifiers__scheme="acl", identifiers__value="D18-1057")
    assert paper.title == "Quantifying Context Overlap for Training Word Embeddings"
    assert paper.doi == "10.18653/v1/d18-1057"
    assert paper.ordered_author_names == ["Yimeng Zhuang", "Jinghui Xie", "Yinhe Zheng", "Xuan Zhu"]
    assert paper.human_id == "[Zhuang, Y., Xie, J., Zheng, Y., & Zhu, X. 2018]"
    assert paper.venue is not None and paper.venue.short_name == "emnlp"
    assert paper.entry_type == "inproceedings"
    assert paper.pages == "587--593"
    # The corpus has no PDF addresses; the Anthology id gives them (issue 20).
    assert paper.pdf_url == "https://aclanthology.org/D18-1057.pdf"
    assert not Paper.objects.filter(source="acl", pdf_url="").exists()
    # the Anthology's bibkey resolves as an alias
    assert PaperIdentifier.objects.filter(scheme="citekey", value="zhuang-etal-2018-quantifying")


def test_second_run_creates_nothing() -> None:
    run(str(SAMPLE))
    count = Paper.objects.count()
    out, _ = run(str(SAMPLE))
    assert Paper.objects.count() == count
    assert "0 created, 0 updated, 300 skipped" in out


def test_gzipped_file_imports(tmp_path: Path) -> None:
    target = tmp_path / "sample.jsonl.gz"
    with gzip.open(target, "wt", encoding="utf-8") as handle:
        handle.write(SAMPLE.read_text(encoding="utf-8"))
    out, _ = run(str(target))
    assert "0 failed" in out
    assert Paper.objects.count() > 250


def test_bad_lines_are_reported_and_the_rest_imports(tmp_path: Path) -> None:
    good = json.dumps({"title": "A good paper", "authors": ["Ada Lovelace"], "year": 1843})
    lines = [
        good,
        "{not json",
        "[1, 2, 3]",
        json.dumps({"title": "", "authors": ["Nobody"]}),
        json.dumps({"title": "Bad year", "year": "soon"}),
        "",
        json.dumps({"title": "Another good one", "year": 2020}),
    ]
    target = tmp_path / "mixed.jsonl"
    target.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(CommandError) as raised:
        run(str(target))
    assert raised.value.returncode == 1
    assert set(Paper.objects.values_list("title", flat=True)) == {
        "A good paper",
        "Another good one",
    }


def test_failures_name_their_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mixed.jsonl"
    target.write_text('{"title": "ok"}\n{broken\n', encoding="utf-8")
    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_jsonl", str(target), "--no-progress", stdout=io.StringIO(), stderr=err)
    assert "skipped line 2: not valid JSON" in err.getvalue()


def test_missing_file_is_exit_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as raised:
        run(str(tmp_path / "nope.jsonl"))
    assert raised.value.returncode == 2


def test_empty_file_is_exit_2(tmp_path: Path) -> None:
    target = tmp_path / "empty.jsonl"
    target.write_text("\n\n", encoding="utf-8")
    with pytest.raises(CommandError) as raised:
        run(str(target))
    assert raised.value.returncode == 2


def test_binary_file_is_exit_2(tmp_path: Path) -> None:
    target = tmp_path / "binary.jsonl"
    target.write_bytes(b"\xff\xfe\x00\x01garbage")
    with pytest.raises(CommandError) as raised:
        run(str(target))
    assert raised.value.returncode == 2
    assert Paper.objects.count() == 0


def test_project_option_adds_papers_to_a_new_project() -> None:
    run(str(SAMPLE), "--project", "ACL sample")
    project = Project.objects.get(name="ACL sample")
    assert project.paper_links.count() == Paper.objects.count()


def bulk_file(tmp_path: Path, papers: int = 1000) -> Path:
    """A JSONL file of `papers` new papers: enough for an import to refresh statistics."""
    target = tmp_path / "bulk.jsonl"
    target.write_text(
        "\n".join(
            json.dumps({"title": f"Bulk paper {n}", "authors": [f"Author {n}"], "year": 2020})
            for n in range(papers)
        ),
        encoding="utf-8",
    )
    return target


def test_a_bulk_import_refreshes_postgresql_statistics(tmp_path: Path) -> None:
    """Without it the planner takes the fresh tables for empty ones and scans every author
    for one paper's details until autovacuum comes by (benchmarks/README.md, "Load")."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("statistics are PostgreSQL's planner's")
    target = bulk_file(tmp_path)

    def estimated_rows() -> float:
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'papers_paper'")
            return float(cursor.fetchone()[0])

    assert estimated_rows() < 1000  # never analysed yet (-1), or before this import
    run(str(target))
    assert estimated_rows() >= 1000


@pytest.mark.django_db(transaction=True)
def test_a_bulk_import_vacuums_what_searches_read_by_index_alone(tmp_path: Path) -> None:
    """A search's year, venue and author filters and its postings are read by index-only
    scans, which need the visibility map only VACUUM sets; autovacuum may be off or late
    (a year filter's count at 95k papers: 44 ms by a sequential scan, 2 ms after)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("the visibility map is PostgreSQL's")
    target = bulk_file(tmp_path)
    run(str(target))
    tables = ["papers_paper", "papers_paperauthor", "papers_lex_posting"]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, relallvisible FROM pg_class WHERE relname = ANY(%s)", [tables]
        )
        all_visible = dict(cursor.fetchall())
    # Pages marked all-visible: set by VACUUM, never by inserts or ANALYZE alone.
    assert all(all_visible[table] > 0 for table in tables), all_visible


def test_malformed_anthology_urls_are_repaired_and_reported(tmp_path: Path) -> None:
    """Issue 20: the corpus glues LREC, doi.org and Springer addresses onto the Anthology's
    (records taken from the 2024-08 dump)."""
    lrec = "http://www.lrec-conf.org/proceedings/lrec2000/pdf/1.pdf"
    doi = "https://doi.org/10.26615/978-954-452-049-6_001"
    records = [
        {"id": lrec, "title": "The Cost258 Signal Generation Test Array", "authors": ["G. Bailly"],
         "year": 2000, "venue": "Proceedings of LREC", "venue_ids": ["lrec"],
         "bibkey": "bailly-etal-2000-cost258", "url": f"https://aclanthology.org/{lrec}"},
        {"id": doi, "title": "Parameter Transfer across Domains for Word Sense Disambiguation",
         "authors": ["Sallam Abualhaija"], "year": 2017, "venue": "Proceedings of RANLP",
         "venue_ids": ["ranlp"], "bibkey": "abualhaija-etal-2017-parameter",
         "url": f"https://aclanthology.org/{doi}"},
    ]  # fmt: skip
    path = tmp_path / "glued.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in records) + "\n")

    out, _ = run(str(path))

    assert "2 malformed Anthology URLs repaired" in out
    cost = Paper.objects.get(title__startswith="The Cost258")
    assert cost.source_url == lrec and cost.pdf_url == lrec
    assert cost.metadata["alternates"]["url"] == f"https://aclanthology.org/{lrec}"
    transfer = Paper.objects.get(title__startswith="Parameter Transfer")
    assert transfer.source_url == doi and transfer.pdf_url == ""  # no PDF address known


CRANFIELD = Path(__file__).parents[1] / "fixtures" / "cranfield" / "cranfield_slice.jsonl"


def test_cranfield_papers_sharing_a_title_stay_apart_and_keep_their_ids() -> None:
    out, _ = run(str(CRANFIELD))
    assert "41 records" in out and "0 failed" in out
    # 17 different papers filed as "note on creep buckling of columns", most without
    # author or year, with abstracts that differ: all kept. Three pairs are one paper each
    # (same title, first author and year): 1274 / 1319 and 843 / 889 with abstracts
    # agreeing, and 259 / 1259, whose abstracts differ (the collection gave 259 another
    # document's): title, first author and year outweigh abstracts, which engines send as
    # snippets of any part; the other abstract is kept under alternates.
    assert Paper.objects.filter(title_key="note on creep buckling of columns").count() == 17
    assert Paper.objects.count() == 38
    ids = set(Paper.objects.values_list("source_id", flat=True))
    assert {"cran-1018", "cran-1035", "cran-259"} <= ids
    revell = Paper.objects.get(source_id="cran-259")
    assert revell.metadata["alternates"]["abstract"][0]["value"].startswith("an analysis")
    merged = Paper.objects.get(source_id="cran-1274")
    assert merged.metadata["alternates"]["source_id"] == [
        {"value": "cran-1319", "source": "cranfield"}
    ]


def test_records_of_other_collections_keep_their_id_as_source_id(tmp_path: Path) -> None:
    target = tmp_path / "scifact.jsonl"
    target.write_text(json.dumps({"id": 4983, "title": "Microstructural development"}) + "\n")
    run(str(target), "--source", "scifact")
    paper = Paper.objects.get()
    assert (paper.source, paper.source_id) == ("scifact", "4983")


ACL_RECORDS = Path(__file__).parents[1] / "fixtures" / "acl_records" / "acl_records.jsonl"


def test_acl_journal_volume_issue_pages_and_names_are_mapped() -> None:
    run(str(ACL_RECORDS))
    cl = Paper.objects.get(source_id="2024.cl-1.2")
    assert cl.venue is not None and cl.venue.name == "Computational Linguistics"
    assert (cl.volume, cl.number, cl.pages) == ("50", "1", "25--47")
    assert cl.publication_date == "2024-03" and cl.entry_type == "article"
    assert cl.metadata["acl_venue"] == "Computational Linguistics, Volume 50, Issue 1 - March 2024"
    assert cl.ordered_author_names[:3] == ["Jianhui Pang", "Baosong Yang", "Derek Fai Wong"]
    assert cl.human_id == "[Pang, J., Yang, B., Wong, D. F., Wan, Y., Liu, D., et al. 2024]"
    tacl = Paper.objects.get(source_id="2020.tacl-1.1")
    assert tacl.venue is not None
    assert tacl.venue.name == "Transactions of the Association for Computational Linguistics"
    assert (tacl.volume, tacl.number, tacl.pages) == ("8", "", "1--18")
    iwslt = Paper.objects.get(source_id="2018.iwslt-1.3")
    assert iwslt.pages == "14--22" and "Yuki Arase" in iwslt.ordered_author_names
    assert Paper.objects.get(source_id="2023.acl-long.report").pages == "xl--lxxv"
    bibtex = render_export(with_relations(Paper.objects.filter(pk=cl.pk)), "bibtex")
    for line in ("journal = {Computational Linguistics}", "volume = {50}", "number = {1}",
                 "pages = {25--47}", "Yang, Baosong and Wong, Derek Fai"):  # fmt: skip
        assert line in bibtex


def test_the_import_builds_the_first_tiers_vectors_on_the_embedded_default() -> None:
    from django.conf import settings

    from papers.models import PaperEmbedding
    from papers.search.embedding import load_model

    out, _ = run(str(SAMPLE), "--no-embeddings")
    assert not PaperEmbedding.objects.exists()
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        # With a broker the workers embed each batch once it commits (this test's
        # transaction never commits, so only the command's own words can be checked).
        out, _ = run(str(SAMPLE))
        assert "300 papers queued for the workers to embed" in out
        return
    out, _ = run(str(SAMPLE))  # the same records again: skipped, but still without vectors
    assert "0 created, 0 updated, 300 skipped" in out
    assert f"300 papers embedded, 0 unchanged ({load_model().name}" in out
    assert PaperEmbedding.objects.filter(model=load_model().name).count() == 300
    out, _ = run(str(SAMPLE))
    assert "0 papers embedded, 300 unchanged" in out


def test_a_large_import_ends_with_the_vector_graph_saved_for_the_server(
    settings: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("usearch")
    from papers.search import vector_index as vector_index_module

    if not settings.CELERY_TASK_ALWAYS_EAGER:  # type: ignore[attr-defined]
        pytest.skip("with a broker the workers embed after the command ends: no graph to build")
    settings.CACHE_DIR = tmp_path / "cache"  # type: ignore[attr-defined]
    settings.VECTOR_INDEX_APPROXIMATE_ABOVE = 100  # type: ignore[attr-defined]
    monkeypatch.setattr(vector_index_module, "INLINE_BUILD_MAX", 100)  # as if 300 were many
    out, _ = run(str(SAMPLE))
    assert "vector graph: 300 vectors, built in" in out and "saved, so the server" in out
    assert len(list((tmp_path / "cache" / "vectors").glob("*.usearch"))) == 1


@pytest.fixture
def graph_above_100(settings: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A library of 300 papers counts as large: its import saves a graph, under tmp_path."""
    pytest.importorskip("usearch")
    from papers.search import vector_index as vector_index_module

    if not settings.CELERY_TASK_ALWAYS_EAGER:  # type: ignore[attr-defined]
        pytest.skip("with a broker the workers embed after the command ends")
    settings.CACHE_DIR = tmp_path / "cache"  # type: ignore[attr-defined]
    settings.VECTOR_INDEX_APPROXIMATE_ABOVE = 100  # type: ignore[attr-defined]
    monkeypatch.setattr(vector_index_module, "INLINE_BUILD_MAX", 100)
    return tmp_path / "cache" / "vectors"


def test_vectors_made_alongside_the_records_are_the_models_and_their_graph_loads_unchanged(
    graph_above_100: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of 40 records: their vectors encoded on the helper thread (at most one batch
    waiting), written after later batches, the graph grown with them. What is stored is
    what the model makes of each paper, and a server loads the graph with nothing to apply
    (its ids and fingerprints are the table's)."""
    import numpy as np

    from papers.models import PaperEmbedding
    from papers.search import vector_store
    from papers.search.embedding import load_model, paper_text
    from papers.search.vector_index import VectorIndex

    monkeypatch.setattr(vector_store, "ALONGSIDE_BEHIND", 1)
    out, _ = run(str(SAMPLE), "--batch-size", "40")
    model = load_model()
    assert f"300 papers embedded, 0 unchanged ({model.name}" in out
    assert "vector graph: 300 vectors, built in" in out and "saved, so the server" in out
    rows = {
        pk: np.frombuffer(vector, dtype="<f4")
        for pk, vector in PaperEmbedding.objects.filter(model=model.name).values_list(
            "paper_id", "vector"
        )
    }
    papers = list(Paper.objects.order_by("pk").values_list("pk", "title", "abstract"))
    assert sorted(rows) == [pk for pk, _, _ in papers]
    expected = model.encode_documents(
        [paper_text(title, abstract) for _, title, abstract in papers]
    )
    assert np.allclose(np.stack([rows[pk] for pk, _, _ in papers]), expected, atol=1e-6)
    index = VectorIndex(PaperEmbedding)
    loaded = index._saved_graph(index._refreshed(None, model))
    assert loaded is not None and loaded[1] == 0 and len(loaded[0]) == 300


def test_a_library_with_vectors_and_no_graph_gets_one_holding_them_too(
    graph_above_100: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first 80 papers imported below the size that needs a graph: none grown. Importing
    the rest grows one from the 80 stored vectors and the new ones, each given once."""
    from papers.models import PaperEmbedding
    from papers.search import vector_index as vector_index_module
    from papers.search.embedding import load_model
    from papers.search.vector_index import VectorIndex

    given: list[int] = []
    add = vector_index_module.GraphGrower.add

    def counted(self: object, ids: object, matrix: object) -> None:
        given.extend(int(i) for i in ids)  # type: ignore[attr-defined]
        add(self, ids, matrix)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_index_module.GraphGrower, "add", counted)

    lines = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    first = graph_above_100.parent.parent / "first.jsonl"
    first.write_text("".join(lines[:80]), encoding="utf-8")
    out, _ = run(str(first))
    assert "80 papers embedded" in out and "vector graph" not in out
    assert not list(graph_above_100.glob("*.usearch")) and not given
    out, _ = run(str(SAMPLE))
    assert "220 papers embedded, 80 unchanged" in out
    assert "vector graph: 300 vectors, built in" in out
    assert sorted(given) == sorted(Paper.objects.values_list("pk", flat=True))
    index = VectorIndex(PaperEmbedding)
    loaded = index._saved_graph(index._refreshed(None, load_model()))
    assert loaded is not None and loaded[1] == 0 and len(loaded[0]) == 300


def test_a_batch_whose_vectors_fail_alongside_is_embedded_again_at_the_end(
    graph_above_100: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One batch's encoding fails on the helper thread: its papers are embedded again by
    the command's usual path, none left without a vector; the graph still loads, the
    difference applied by the process that loads it."""
    from papers.models import PaperEmbedding
    from papers.search import vector_store
    from papers.search.embedding import load_model
    from papers.search.vector_index import VectorIndex

    model = load_model()
    calls = []
    encode = vector_store.VectorsAlongside._encode

    def failing_once(self: object, todo: list[tuple[int, str, str]]) -> object:
        calls.append(len(todo))
        if len(calls) == 2:
            raise RuntimeError("out of memory, say")
        return encode(self, todo)  # type: ignore[arg-type]

    monkeypatch.setattr(vector_store.VectorsAlongside, "_encode", failing_once)
    out, _ = run(str(SAMPLE), "--batch-size", "100")
    assert len(calls) == 3
    assert f"300 papers embedded, 0 unchanged ({model.name}" in out
    assert PaperEmbedding.objects.filter(model=model.name).count() == 300
    index = VectorIndex(PaperEmbedding)
    loaded = index._saved_graph(index._refreshed(None, model))
    assert loaded is not None and loaded[1] == 100 and len(loaded[0]) == 300

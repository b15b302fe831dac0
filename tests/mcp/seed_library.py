"""Prepare a knowledge base for the MCP server tests and print what it holds as JSON.

Run in a subprocess with the server's environment (RESEARCH_DIRECTORY / DATABASE_URL), so
the data lands where the server under test will read it:

    python tests/mcp/seed_library.py [--embed]
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402

from core.bootstrap import prepare_knowledge_base  # noqa: E402
from papers.schemas import PaperRecord  # noqa: E402
from papers.services import papers_upsert  # noqa: E402
from projects.services import project_add_papers, project_create  # noqa: E402

PAPERS = {
    "attention": dict(
        title="Attention Is All You Need",
        authors=["Ashish Vaswani", "Noam Shazeer"],
        year=2017,
        venue="NeurIPS",
        abstract="The dominant sequence transduction models are based on recurrent networks.",
        doi="10.5555/3295222.3295349",
        keywords=["transformer"],
    ),
    "bert": dict(
        title="BERT: Pre-training of Deep Bidirectional Transformers",
        authors=["Jacob Devlin", "Ming-Wei Chang"],
        year=2019,
        venue="NAACL",
        abstract="We introduce a new language representation model called BERT.",
        arxiv_id="1810.04805",
    ),
    "resnet": dict(
        title="Deep Residual Learning for Image Recognition",
        authors=["Kaiming He", "Xiangyu Zhang"],
        year=2016,
        venue="CVPR",
        abstract="Deeper neural networks are more difficult to train.",
    ),
    "unfiled": dict(
        title="A Paper In No Project",
        authors=["Ada Lovelace"],
        year=1843,
        source_id="note-g",
    ),
}


def main() -> None:
    prepare_knowledge_base(create_admin=False)
    names = list(PAPERS)
    outcome = papers_upsert(records=[PaperRecord.build(**PAPERS[name]) for name in names])
    ids = dict(zip(names, outcome.paper_ids, strict=True))
    nlp = project_create(name="NLP Reading", description="Language models.")
    vision = project_create(name="Vision", description="Images.")
    project_add_papers(project=nlp, paper_ids=[ids["attention"], ids["bert"]])
    project_add_papers(project=vision, paper_ids=[ids["resnet"]])

    from papers.models import Paper

    papers = {
        name: {"paper_id": pid, "id": p.human_id, "citekey": p.citekey}
        for name, pid in ids.items()
        for p in [Paper.objects.get(pk=pid)]
    }
    if "--embed" in sys.argv[1:]:
        # The library's vectors, made here (a command of its own cost a process start): with
        # a broker configured, the embedding tasks the seeding queued go to the test run's
        # Celery worker, whose database is not this one.
        call_command("reindex_embeddings", "--no-progress", stdout=io.StringIO())
    print(json.dumps({"projects": {"nlp": nlp.id, "vision": vision.id}, "papers": papers}))


if __name__ == "__main__":
    main()

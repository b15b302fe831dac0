"""Prepare a knowledge base for the browser tests and print what it holds as JSON: a few
papers (three about transformers, two not) and a staff user in the Curators group.

Run in a subprocess with the server's environment (RESEARCH_DIRECTORY / DATABASE_URL) and
BROWSER_USER_PASSWORD set:

    python tests/browser/seed_curation.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

import django

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402

from core.bootstrap import prepare_knowledge_base  # noqa: E402
from papers.models import Paper  # noqa: E402
from papers.schemas import PaperRecord  # noqa: E402
from papers.services import papers_upsert  # noqa: E402

PAPERS = {
    "attention": dict(
        title="Attention Is All You Need",
        authors=["Ashish Vaswani", "Noam Shazeer"],
        year=2017,
        venue="NeurIPS",
        abstract="We propose a new simple network architecture, the Transformer, based solely "
        "on attention mechanisms.",
    ),
    "universal": dict(
        title="Universal Transformers",
        authors=["Mostafa Dehghani", "Stephan Gouws"],
        year=2018,
        venue="ICLR",
    ),
    "xl": dict(
        title="Transformer-XL: Attentive Language Models beyond a Fixed-Length Context",
        authors=["Zihang Dai", "Zhilin Yang"],
        year=2019,
        venue="ACL",
    ),
    "resnet": dict(
        title="Deep Residual Learning for Image Recognition",
        authors=["Kaiming He", "Xiangyu Zhang"],
        year=2016,
        venue="CVPR",
    ),
    "lstm": dict(
        title="Long Short-Term Memory",
        authors=["Sepp Hochreiter", "Jürgen Schmidhuber"],
        year=1997,
        venue="Neural Computation",
    ),
}


def main() -> None:
    prepare_knowledge_base(create_admin=False)
    names = list(PAPERS)
    outcome = papers_upsert(records=[PaperRecord.build(**PAPERS[name]) for name in names])
    user = User.objects.create_user(
        "curator", password=os.environ["BROWSER_USER_PASSWORD"], is_staff=True
    )
    user.groups.add(Group.objects.get(name="Curators"))
    papers = {
        name: {"paper_id": p.pk, "citekey": p.citekey, "year": p.year}
        for name, pid in zip(names, outcome.paper_ids, strict=True)
        for p in [Paper.objects.get(pk=pid)]
    }
    print(json.dumps({"user": user.username, "papers": papers}))


if __name__ == "__main__":
    main()

"""Try to download each URL given on the command line as a paper's PDF; print one JSON
line per URL with the outcome. Run in a subprocess with a server's environment."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

import django

django.setup()

from core.errors import DomainError  # noqa: E402
from papers.pdf.services import pdf_download  # noqa: E402


def main() -> None:
    paper_id = int(sys.argv[1])
    for url in sys.argv[2:]:
        try:
            pdf_download(paper_id=paper_id, url=url)
        except DomainError as error:
            print(json.dumps({"url": url, "refused": True, **error.as_dict()}, default=str))
        else:
            print(json.dumps({"url": url, "refused": False}))


if __name__ == "__main__":
    main()

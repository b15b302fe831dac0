"""Seed a knowledge base for the hostile-input tests and print what it holds as JSON.

The MCP tests' library (tests/mcp/seed_library.py) plus a user with a write API token,
so the REST write refusals of a read-only server are checked with a valid credential.
Run in a subprocess with the server's environment, as seed_library.py is.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.mcp import seed_library

PDF_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pdfs" / "2304.02623v1.pdf"


def main() -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        seed_library.main()
    data = json.loads(printed.getvalue().strip().splitlines()[-1])

    from django.contrib.auth.models import User

    from papers.pdf.services import pdf_attach_file
    from research_site.tokens import api_token_create

    # A PDF with an outline on the first paper, so section names reach the PDF reader.
    pdf_attach_file(paper_id=data["papers"]["attention"]["paper_id"], path=PDF_FIXTURE)

    writer = User.objects.create_user("security-writer", password=None)
    _, secret = api_token_create(user=writer, name="security", scope="write")
    data["write_token"] = secret
    print(json.dumps(data))


if __name__ == "__main__":
    main()

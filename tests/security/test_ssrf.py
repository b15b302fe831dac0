"""Server-side request forgery: a URL an agent or a search engine supplies must never
make the server talk to its own machine or network. A local listener counts every
connection it receives; it must receive none."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.mcp.conftest import PYTHON, ROOT, KnowledgeBase
from tests.security.conftest import Listener

PROBE = Path(__file__).with_name("pdf_download_probe.py")


def test_pdf_url_to_this_machine_or_its_network_is_refused_unfetched(
    security_kb: KnowledgeBase, listener: Listener
) -> None:
    port = listener.port
    urls = [
        f"http://127.0.0.1:{port}/paper.pdf",
        f"http://localhost:{port}/paper.pdf",
        f"http://127.1:{port}/paper.pdf",
        f"http://2130706433:{port}/paper.pdf",
        f"http://0x7f000001:{port}/paper.pdf",
        f"http://[::ffff:127.0.0.1]:{port}/paper.pdf",
        f"http://[::1]:{port}/paper.pdf",
        f"http://0.0.0.0:{port}/paper.pdf",
        f"http://user@127.0.0.1:{port}/paper.pdf",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00::1]/x.pdf",
        "http://10.0.0.1/x.pdf",
        "http://192.168.1.1/x.pdf",
        "http://[64:ff9b::a00:1]/x.pdf",  # 10.0.0.1 through a NAT64 gateway
        "http://100.64.0.1/x.pdf",  # shared address space (carrier-grade NAT)
        "http://[2002:a00:1::1]/x.pdf",  # 6to4 carrying 10.0.0.1
        "file:///etc/passwd",
        "ftp://127.0.0.1/x.pdf",
        "gopher://127.0.0.1:6379/_INFO",
    ]
    env = {**security_kb.env, "PDF_ALLOW_PRIVATE_URLS": "false"}
    paper_id = str(security_kb.paper("bert")["paper_id"])
    done = subprocess.run(
        [PYTHON, str(PROBE), paper_id, *urls], env=env, cwd=ROOT, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    outcomes = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert [o["url"] for o in outcomes] == urls
    assert all(o["refused"] for o in outcomes), outcomes
    reasons = {o["url"]: o.get("reason") for o in outcomes}
    assert {reasons[u] for u in urls[:16]} <= {"private_address", "dns_failed", "bad_url"}, reasons
    assert {reasons[u] for u in urls[16:]} == {"bad_scheme"}, reasons
    assert listener.hits == []

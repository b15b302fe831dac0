"""Protocol strictness checks against a running server, for
`scripts/mcp-conformance`: the cases the official suite and the Inspector do not cover.

    mcp_strictness.py http URL            # a running /mcp
    mcp_strictness.py stdio               # starts `manage.py serve --transport stdio`
    mcp_strictness.py sse BASE_URL        # a running `serve --transport sse`

Prints one `PASS`/`FAIL` line per case, then `N passed, M failed`; exit 1 on any failure.
The tests in tests/mcp/test_protocol_strictness.py assert the same codes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2

ROOT = Path(__file__).resolve().parent.parent
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
V0618 = {**JSON, "mcp-protocol-version": "2025-06-18"}
DEEP = "[" * 2000 + "]" * 2000


def rpc(method: str, params: Any = None, request_id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(name: str, arguments: dict[str, Any], request_id: Any = 1) -> dict[str, Any]:
    return rpc("tools/call", {"name": name, "arguments": arguments}, request_id)


def deep_call(request_id: int) -> str:
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":'
        f'"save_paper_summary","arguments":{{"paper_id":"1","template":"brief","content":{DEEP}}}}}}}'
    )


def code_of(answer: Any, request_id: Any = None) -> int | None:
    if not isinstance(answer, dict) or "error" not in answer or answer.get("id") != request_id:
        return None
    code = answer["error"].get("code")
    return code if isinstance(code, int) else None


class Report:
    def __init__(self, transport: str) -> None:
        self.transport = transport
        self.passed = self.failed = 0

    def case(self, name: str, check: Callable[[], tuple[bool, str]]) -> None:
        try:
            ok, seen = check()
        except Exception as exc:
            ok, seen = False, repr(exc)
        if ok:
            self.passed += 1
            print(f"PASS  {self.transport}: {name}")
        else:
            self.failed += 1
            print(f"FAIL  {self.transport}: {name} (got {seen[:300]})")

    def finish(self) -> int:
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1


# --- HTTP ------------------------------------------------------------------------------


def check_http(url: str) -> int:
    report = Report("http")
    client = httpx2.Client(timeout=30)

    def post(body: Any, headers: dict[str, str] = V0618) -> httpx2.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return client.post(url, content=content, headers=headers)

    def expect(body: Any, status: int, code: int | None, rid: Any = None, **kw: Any) -> Any:
        def check() -> tuple[bool, str]:
            response = post(body, **kw)
            answer = response.json() if response.content else None
            ok = response.status_code == status and (
                (code is None and not response.content) or code_of(answer, rid) == code
            )
            return ok, f"{response.status_code} {response.text}"

        return check

    report.case("unparseable body: 400 -32700", expect(b"{nope", 400, -32700))
    report.case(
        '"id": null: 400 -32600',
        expect({"jsonrpc": "2.0", "id": None, "method": "ping"}, 400, -32600),
    )
    report.case("method not a string: 400 -32600", expect(rpc(7), 400, -32600, 1))  # type: ignore[arg-type]
    report.case(
        "POSTed response: 202, no body",
        expect({"jsonrpc": "2.0", "id": 5, "result": {}}, 202, None),
    )
    report.case(
        "notification: 202, no body",
        expect({"jsonrpc": "2.0", "method": "notifications/initialized"}, 202, None),
    )
    report.case(
        "Accept: text/html: 406",
        expect(rpc("ping"), 406, -32600, headers={**V0618, "accept": "text/html"}),
    )
    report.case(
        "Content-Type: text/plain: 415",
        expect(rpc("ping"), 415, -32600, headers={**V0618, "content-type": "text/plain"}),
    )
    report.case("batch under 2025-06-18: 400 -32600", expect([rpc("ping")], 400, -32600))

    def batch_0326() -> tuple[bool, str]:
        response = post(
            [rpc("ping", request_id=1), {"jsonrpc": "2.0", "id": None, "method": "ping"}], JSON
        )
        answers = response.json()
        ok = response.status_code == 200 and [a.get("id") for a in answers] == [1, None]
        return ok and code_of(answers[1]) == -32600 and answers[0].get(
            "result"
        ) == {}, response.text

    report.case("batch under 2025-03-26 (no header): an array of answers", batch_0326)
    report.case(
        "bogus cursor: -32602", expect(rpc("tools/list", {"cursor": "bogus"}), 200, -32602, 1)
    )
    report.case(
        "missing resource: -32002",
        expect(rpc("resources/read", {"uri": "paper://999999999/metadata"}), 200, -32002, 1),
    )
    report.case(
        "unknown resource URI: -32002",
        expect(rpc("resources/read", {"uri": "nothing://here"}), 200, -32002, 1),
    )
    report.case(
        r"lone surrogate in an argument: -32602",
        expect(call("get_citing_papers", {"paper_id": "\ud800"}), 200, -32602, 1),
    )
    report.case(
        r"lone surrogate in the id: answered",
        lambda: (
            post(rpc("ping", request_id="\ud800")).json()
            == {"jsonrpc": "2.0", "id": "\ud800", "result": {}},
            "",
        ),
    )
    report.case("arguments nested 2000 deep: -32602", expect(deep_call(4).encode(), 200, -32602, 4))
    report.case("still serving: ping", lambda: (post(rpc("ping")).json().get("result") == {}, ""))
    return report.finish()


# --- stdio -----------------------------------------------------------------------------


def check_stdio() -> int:
    report = Report("stdio")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--transport", "stdio"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    watchdog = threading.Timer(120, process.kill)
    watchdog.start()
    assert process.stdin is not None and process.stdout is not None

    def ask(line: Any) -> Any:
        data = line if isinstance(line, bytes) else json.dumps(line).encode()
        process.stdin.write(data + b"\n")  # type: ignore[union-attr]
        process.stdin.flush()  # type: ignore[union-attr]
        return json.loads(process.stdout.readline())  # type: ignore[union-attr]

    def expect(line: Any, code: int, rid: Any = None) -> Callable[[], tuple[bool, str]]:
        def check() -> tuple[bool, str]:
            answer = ask(line)
            return code_of(answer, rid) == code, json.dumps(answer)

        return check

    try:
        report.case("unparseable line: -32700", expect(b"{nope", -32700))
        report.case(
            '"id": null: -32600', expect({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600)
        )
        report.case("batch before negotiation: -32600", expect([rpc("ping")], -32600))
        init = rpc(
            "initialize",
            {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "strict", "version": "1"},
            },
        )
        report.case(
            "initialize 2025-03-26",
            lambda: (ask(init)["result"]["protocolVersion"] == "2025-03-26", ""),
        )

        def batch() -> tuple[bool, str]:
            answers = ask([rpc("ping", request_id=2), rpc("tools/list", {"cursor": "x"}, 3), 5])
            ids = [a.get("id") for a in answers]
            return ids == [2, 3, None] and code_of(answers[1], 3) == -32602, json.dumps(answers)

        report.case("batch under 2025-03-26: answered, bogus cursor -32602", batch)
        report.case(
            r"lone surrogate in the id: answered",
            lambda: (ask(rpc("ping", request_id="\ud800")).get("id") == "\ud800", ""),
        )
        report.case(
            r"lone surrogate in an argument: -32602",
            expect(call("get_citing_papers", {"paper_id": "\ud800"}, 6), -32602, 6),
        )
        report.case("arguments nested 2000 deep: -32602", expect(deep_call(7).encode(), -32602, 7))
        report.case(
            "missing resource: -32002",
            expect(rpc("resources/read", {"uri": "paper://999999999/metadata"}, 8), -32002, 8),
        )
        report.case(
            "still serving: ping", lambda: (ask(rpc("ping", request_id=9)).get("result") == {}, "")
        )
    finally:
        process.stdin.close()
        process.wait(30)
        watchdog.cancel()
    return report.finish()


# --- SSE -------------------------------------------------------------------------------


def check_sse(base_url: str) -> int:
    report = Report("sse")
    with httpx2.Client(timeout=30) as client, client.stream("GET", f"{base_url}/sse") as stream:
        lines = stream.iter_lines()
        endpoint = next(line for line in lines if line.startswith("data:"))
        url = base_url + endpoint.removeprefix("data:").strip()

        def expect(
            body: Any, status: int, code: int, rid: Any = None
        ) -> Callable[[], tuple[bool, str]]:
            def check() -> tuple[bool, str]:
                content = body if isinstance(body, bytes) else json.dumps(body).encode()
                response = client.post(url, content=content, headers=JSON)
                return response.status_code == status and code_of(
                    response.json(), rid
                ) == code, response.text

            return check

        report.case("unparseable POST: 400 -32700 (no traceback)", expect(b"{nope", 400, -32700))
        report.case(
            '"id": null: 400 -32600',
            expect({"jsonrpc": "2.0", "id": None, "method": "ping"}, 400, -32600),
        )
        report.case("batch: 400 -32600", expect([rpc("ping")], 400, -32600))
        report.case(
            "arguments nested 2000 deep: -32602", expect(deep_call(3).encode(), 400, -32602, 3)
        )
        report.case(
            "valid message: 202",
            lambda: ((r := client.post(url, json=rpc("ping"))).status_code == 202, r.text),
        )
    return report.finish()


def main() -> int:
    transport = sys.argv[1] if len(sys.argv) > 1 else ""
    if transport == "http" and len(sys.argv) == 3:
        return check_http(sys.argv[2])
    if transport == "stdio":
        return check_stdio()
    if transport == "sse" and len(sys.argv) == 3:
        return check_sse(sys.argv[2].rstrip("/"))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Mutation testing (mutmut 3) of the modules where a silent bug costs most (docs/MUTATION.md).

Each group below mutates one module (or a few functions of one) and runs only the test
files that exercise it, so a group takes minutes, not the whole suite's hour: mutmut maps
every mutated function to the tests that call it and runs only those per mutant.

mutmut reads its configuration from the current directory's pyproject.toml and copies the
source into ./mutants, so each group runs in a scratch directory of its own,
$MUTATION_DIR/<group>/ (by default /tmp/research-mcp-mutation-<checkout>/), holding links
to the project's packages and a pyproject.toml made of the project's own plus that group's
[tool.mutmut]. The project's files are never changed.

    scripts/mutation.py                  # every group
    scripts/mutation.py review bibtex    # some groups
    scripts/mutation.py --list           # the groups and their tests
    scripts/mutation.py --survivors bibtex   # after adding tests: re-test only the
                                         # survivors (and timeouts) of the kept results
    scripts/mutation.py review-rules && scripts/mutation.py --survivors-of review-rules review

Results: $MUTATION_DIR/<group>/ (`mutmut results`, `mutmut show <name>` there) and a summary
table on stdout and in $MUTATION_DIR/summary.json. docs/MUTATION.md explains the survivors.
Run it with `nice`: mutmut uses every core.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Outside the checkout: mypy and ruff would read the copies of the code mutmut makes.
WORK = Path(
    os.environ.get("MUTATION_DIR")
    or Path(tempfile.gettempdir()) / f"research-mcp-mutation-{ROOT.name}"
)
PACKAGES = ["core", "engines", "mcp_endpoint", "papers", "projects", "research_site", "manage.py"]


@dataclass(frozen=True)
class Group:
    mutate: list[str]
    tests: list[str]
    # mutmut mutant-name globs (module.x_function__mutmut_N) when only some functions count
    only: list[str] = field(default_factory=list)
    # more pytest arguments for the selection (e.g. -k to leave out the slowest tests)
    select: list[str] = field(default_factory=list)


GROUPS: dict[str, Group] = {
    "auth": Group(
        mutate=["research_site/api_auth.py", "research_site/tokens.py"],
        tests=[
            "tests/api/test_auth.py",
            "tests/api/test_tokens.py",
            "tests/security/test_read_only_and_tokens.py",
        ],
    ),
    "origin": Group(
        mutate=["mcp_endpoint/http.py"],
        tests=["tests/mcp/test_endpoint_core.py", "tests/mcp/test_origin_host.py"],
        only=[
            "mcp_endpoint.http.x__origin_parts__mutmut_*",
            "mcp_endpoint.http.x_origin_allowed__mutmut_*",
            "mcp_endpoint.http.x_host_allowed__mutmut_*",
            "mcp_endpoint.http.x_is_loopback__mutmut_*",
        ],
    ),
    "bibtex": Group(
        mutate=["papers/bibtex/writer.py", "papers/bibtex/reader.py"],
        tests=["tests/papers/bibtex/test_reader.py", "tests/papers/test_exports.py"],
        # The tests that import d2l.bib (488 entries) take seconds each: per mutant, hours.
        select=[
            "-k",
            "not d2l and not second_bibtex_import and not imported_entries_get "
            "and not family_names_shape",
        ],
    ),
    "ratelimit": Group(
        mutate=["engines/ratelimit.py"],
        tests=[
            "tests/engines/test_ratelimit_rules.py",
            "tests/engines/test_failures.py",
            "tests/api/test_rate_limits.py",
        ],
        # A wall-clock bound (< 1 s) that a loaded machine misses: the clean run must pass.
        select=["-k", "not retry_after_past_the_deadline"],
    ),
    "identifiers": Group(
        mutate=["papers/identifiers.py"],
        tests=["tests/papers/test_identifiers.py"],
    ),
    # The rules' own tests alone (no database: a minute), then `review --survivors`-style
    # runs of what they leave against the tool-path tests: see docs/MUTATION.md.
    "review-rules": Group(
        mutate=["projects/review/workflow.py"],
        tests=["tests/projects/review/test_workflow_rules.py"],
    ),
    "review": Group(
        mutate=["projects/review/workflow.py"],
        tests=[
            "tests/projects/review/test_workflow_rules.py",
            "tests/projects/review/test_workflow.py",
            "tests/projects/review/test_admin.py",
        ],
    ),
}


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in values) + "]"


def prepare(name: str, group: Group, fresh: bool) -> Path:
    """The group's scratch directory: links to the code, the tests copied, its config."""
    work = WORK / name
    if fresh and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    # mutmut copies these into ./mutants (the tests again on every run): links keep them
    # current, and point at this checkout even in a results folder copied from another.
    for entry in [*PACKAGES, "tests"]:
        link = work / entry
        if link.is_symlink():
            link.unlink()
        link.symlink_to(ROOT / entry)
    tests = [test for test in group.tests if (ROOT / test).exists()]
    config = (ROOT / "pyproject.toml").read_text() + (
        "\n[tool.mutmut]\n"
        f"source_paths = {toml_list(PACKAGES)}\n"
        f"only_mutate = {toml_list(group.mutate)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list([*tests, *group.select])}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-o", "addopts="]\n'
        "use_git_change_detection = false\n"
        # Forked straight from the process that ran the tests, a mutant inherits dead thread
        # pools (the review steps, engine fan-out) and fails for that: a false "killed".
        'process_isolation = "forkserver"\n'
    )
    (work / "pyproject.toml").write_text(config)
    if fresh and (work / "mutants").exists():
        shutil.rmtree(work / "mutants")
    return work


def outcomes(work: Path, group: Group) -> dict[str, str]:
    """Each mutant's outcome, from `mutmut results --all true` (name: status lines)."""
    out = subprocess.run(
        [str(ROOT / ".venv/bin/mutmut"), "results", "--all", "true"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    found = {}
    for line in out.splitlines():
        if ":" not in line:
            continue
        mutant, status = (part.strip() for part in line.rsplit(":", 1))
        if not group.only or any(fnmatch(mutant, pattern) for pattern in group.only):
            found[mutant] = status
    return found


def counts(work: Path, group: Group) -> dict[str, int]:
    tally: dict[str, int] = {}
    for status in outcomes(work, group).values():
        tally[status] = tally.get(status, 0) + 1
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("groups", nargs="*", help=f"some of: {', '.join(GROUPS)}")
    parser.add_argument("--list", action="store_true", help="print the groups and exit")
    parser.add_argument("--keep", action="store_true", help="reuse earlier results")
    parser.add_argument(
        "--survivors-of",
        metavar="GROUP",
        help="run only the mutants that GROUP's kept results left alive (same module)",
    )
    parser.add_argument(
        "--survivors",
        action="store_true",
        help="re-test only the mutants that survived, had no test or timed out in the kept results",
    )
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    if args.list:
        for name, group in GROUPS.items():
            print(f"{name}: {' '.join(group.mutate)}  <-  {' '.join(group.tests)}")
        return 0
    unknown = sorted(set(args.groups) - set(GROUPS))
    if unknown:
        parser.error(f"unknown group(s) {', '.join(unknown)}; use some of {', '.join(GROUPS)}")
    env = {**os.environ, "RESEARCH_DIRECTORY": tempfile.mkdtemp(prefix="research-mcp-mut.")}
    summary: dict[str, dict[str, int]] = {}
    for name in args.groups or list(GROUPS):
        group = GROUPS[name]
        work = prepare(name, group, fresh=not (args.keep or args.survivors or args.survivors_of))
        print(f"== {name}: {' '.join(group.mutate)}", flush=True)
        command = [str(ROOT / ".venv/bin/mutmut"), "run", "--max-children", str(args.max_children)]
        selected = group.only
        if args.survivors or args.survivors_of:
            source = args.survivors_of or name
            selected = [
                mutant
                for mutant, status in outcomes(WORK / source, GROUPS[source]).items()
                if status in ("survived", "no tests", "timeout")
            ]
            if not selected:
                summary[name] = counts(work, group)
                continue
        subprocess.run([*command, *selected], cwd=work, env=env, check=False)
        summary[name] = counts(work, group)
    print(f"\n{'group':12} {'killed':>7} {'survived':>9} {'other':>6} {'kill rate':>10}")
    for name, tally in summary.items():
        killed = tally.get("killed", 0) + tally.get("timeout", 0)
        survived = tally.get("survived", 0) + tally.get("no tests", 0)
        other = sum(tally.values()) - killed - survived
        rate = killed / (killed + survived) if killed + survived else 0.0
        print(f"{name:12} {killed:7} {survived:9} {other:6} {rate:10.1%}")
    WORK.mkdir(parents=True, exist_ok=True)
    previous = {}
    if (WORK / "summary.json").exists():
        previous = json.loads((WORK / "summary.json").read_text())
    (WORK / "summary.json").write_text(json.dumps({**previous, **summary}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

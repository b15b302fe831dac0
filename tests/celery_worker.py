"""A Celery worker a test starts, kills and restarts itself (the suite's shared workers of
scripts/with-celery-worker.sh are never touched)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STARTUP_SECONDS = 60.0


@dataclass
class CeleryWorker:
    """One worker process on `queues` (threads pool: one process, so one kill ends it);
    its logs go to `directory`."""

    directory: Path
    env: dict[str, str]
    queues: str
    name: str
    concurrency: int = 8
    process: subprocess.Popen[bytes] | None = None
    logs: list[Path] = field(default_factory=list)

    def start(self) -> CeleryWorker:
        log_path = self.directory / f"worker-{self.name}-{time.monotonic_ns()}.log"
        self.logs.append(log_path)
        command = [
            sys.executable, "-m", "celery", "-A", "research_site", "worker", "--pool=threads",
            f"--concurrency={self.concurrency}", f"--queues={self.queues}",
            f"--hostname={self.name}@%h", "--without-gossip", "--without-mingle",
            "--loglevel=INFO",
        ]  # fmt: skip
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while "ready" not in log_path.read_text(errors="replace"):
            assert self.process.poll() is None, log_path.read_text(errors="replace")
            assert time.monotonic() < deadline, "worker did not start"
            time.sleep(0.2)
        return self

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return "\n".join(path.read_text(errors="replace") for path in self.logs)

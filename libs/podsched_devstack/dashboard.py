"""The dashboard as a local process, for `make up` / `make run` and the tests.

`python -m podsched_dashboard` is a client of the public API like the CLI: it gets the API's address
(PODSCHED_SERVER), where to listen (PODSCHED_LISTEN_ADDRESS) and Jaeger's query API for trace
links (PODSCHED_JAEGER_URL); a kubeconfig or token in the environment is passed on as the CLI
would read it. It is ready when GET /healthz answers 200: the Watch has delivered the cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from podsched_service.config import env_name

from .process import DevstackError, spawn, stop_child, tail, wait_ready

DEFAULT_DASHBOARD_ADDRESS = "127.0.0.1:8080"


class DashboardProcess:
    """One dashboard process started by this process."""

    def __init__(
        self,
        run_dir: Path,
        server: str,
        *,
        listen_address: str = DEFAULT_DASHBOARD_ADDRESS,
        jaeger_url: str = "",
        extra_env: dict[str, str] | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.server = server
        self.listen_address = listen_address
        self.jaeger_url = jaeger_url
        self.extra_env = extra_env or {}
        self.process: subprocess.Popen[bytes] | None = None
        run_dir.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"http://{self.listen_address}"

    @property
    def log_path(self) -> Path:
        return self.run_dir / "dashboard.log"

    @property
    def pid_path(self) -> Path:
        return self.run_dir / "dashboard.pid"

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                env_name("server"): self.server,
                env_name("listen_address"): self.listen_address,
                env_name("jaeger_url"): self.jaeger_url,
            }
        )
        env.update(self.extra_env)
        return env

    def is_ready(self) -> bool:
        """The Watch has delivered the cluster (GET /healthz is 200)."""
        return self._answers("/healthz")

    def is_serving(self) -> bool:
        """The page answers, whether or not the API lets it follow the cluster."""
        return self._answers("/api/summary")

    def _answers(self, path: str) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}{path}", timeout=1.0) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.HTTPError):
            return False

    def start(self, timeout: float = 60.0, *, until_synced: bool = True) -> None:
        """Start and wait until it has the cluster (`until_synced`) or only until its page answers."""
        with open(self.log_path, "ab") as log:
            self.process = spawn([sys.executable, "-m", "podsched_dashboard"], log, env=self.environment())
        self.pid_path.write_text(str(self.process.pid))
        try:
            self.wait_until(self.is_ready if until_synced else self.is_serving, timeout, f"dashboard ({self.url})")
        except DevstackError:
            self.stop()  # never left running behind a failed start
            raise

    def wait_until(self, condition: Callable[[], bool], timeout: float, subject: str) -> None:
        """Poll `condition` until it holds; fail with the log's tail if the process exits or time runs out."""
        wait_ready(
            self.process,
            condition,
            timeout=timeout,
            poll_seconds=0.1,
            what="dashboard",
            subject=subject,
            log_tails=lambda: tail(self.log_path, 30),
        )

    def stop(self, timeout: float = 10.0) -> int | None:
        process, self.process = self.process, None
        self.pid_path.unlink(missing_ok=True)
        return None if process is None else stop_child(process, timeout)

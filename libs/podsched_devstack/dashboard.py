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
from pathlib import Path

from podsched_service.config import env_name

from .process import spawn, stop_child, tail, wait_ready

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
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=1.0) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.HTTPError):
            return False

    def start(self, timeout: float = 60.0) -> None:
        with open(self.log_path, "ab") as log:
            self.process = spawn([sys.executable, "-m", "podsched_dashboard"], log, env=self.environment())
        self.pid_path.write_text(str(self.process.pid))
        wait_ready(
            self.process,
            self.is_ready,
            timeout=timeout,
            poll_seconds=0.1,
            what="dashboard",
            subject=f"dashboard ({self.url}/healthz)",
            log_tails=lambda: tail(self.log_path, 30),
        )

    def stop(self, timeout: float = 10.0) -> int | None:
        process, self.process = self.process, None
        self.pid_path.unlink(missing_ok=True)
        return None if process is None else stop_child(process, timeout)

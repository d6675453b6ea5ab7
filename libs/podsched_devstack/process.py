"""Long-running local processes of the development stack: start, wait until ready, log, stop, measure.

Kafka, Jaeger and the four services all run the same way: each in its own session (Ctrl-C in a terminal
running pytest or ``make run`` must not reach it directly; its shutdown is ours to drive), its output
appended to a log file, its pid in a file so that another process (the CLI's ``stop``, ``make down``)
finds it again, stopped with SIGTERM and, after a grace period, SIGKILL to its whole process group.
:class:`ManagedProcess` is that lifecycle for one process owning a data directory (Kafka, Jaeger);
:mod:`podsched_devstack.services` uses the same functions for the services. :func:`run_cli` is the one
``install|start|status|stop`` command line of every managed process.

Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

__all__ = [
    "HOST",
    "DevstackError",
    "ManagedProcess",
    "devstack_dir",
    "free_ports",
    "group_pids",
    "process_cmdline",
    "process_cpu_seconds",
    "repo_root",
    "rss_bytes",
    "run_cli",
    "spawn",
    "stop_child",
    "stop_pid",
    "tail",
    "wait_ready",
]

#: Every development process listens on loopback only.
HOST = "127.0.0.1"

# A file only a podsched checkout has (the Kafka pom): the checkout holds the configuration files the
# stack reads, which an installed wheel does not.
_CHECKOUT_MARKER = Path("deploy/local/kafka/pom.xml")


class DevstackError(RuntimeError):
    """A local-infrastructure step failed; the message says what to do about it."""


def repo_root() -> Path:
    """The podsched checkout this module runs from."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / _CHECKOUT_MARKER).is_file():
            return parent
    raise DevstackError(f"no {_CHECKOUT_MARKER} above {here}: run podsched_devstack from a podsched checkout")


def devstack_dir(name: str) -> Path:
    """``<checkout>/.cache/devstack/<name>``: where ``make up`` keeps one component's state (git ignores .cache/)."""
    return repo_root() / ".cache" / "devstack" / name


def free_ports(count: int) -> list[int]:
    """Distinct free loopback ports. All sockets stay open until every port is chosen, so none repeats."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            sock.bind((HOST, 0))
            ports.append(sock.getsockname()[1])
        return ports


def tail(path: Path, lines: int = 40) -> str:
    """The last ``lines`` lines of a log (read from its last 32 KiB), "(none)" if it cannot be read."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 32_768))
            text = handle.read().decode(errors="replace")
    except OSError:
        return "(none)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"


# ----------------------------------------------------------------------------------------------------
# /proc
# ----------------------------------------------------------------------------------------------------


def process_cmdline(pid: int) -> str | None:
    """The command line of a live process, or None if it is gone (zombies count as gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc (macOS): fall back to "is the pid alive" without identity
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace") or None


def rss_bytes(pid: int) -> int | None:
    """Resident memory of one process from /proc (None without /proc or once it is gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return None


def anonymous_bytes(pid: int) -> int | None:
    """The anonymous part of one process's resident memory (/proc/PID/smaps_rollup): what it allocated,
    without the file-backed pages of the code it mapped (None without /proc or once it is gone)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Anonymous:"):
                return int(line.split()[1]) * 1024
    return None


def _stat_fields(stat_path: Path) -> list[str]:
    """The fields of a /proc stat file after the command name, from the state (field 3) on; raises
    OSError once the process or thread is gone."""
    stat = stat_path.read_text()
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    return stat[stat.rindex(")") + 2 :].split()


def process_cpu_seconds(pid: int) -> float | None:
    """utime + stime of one process from /proc (None without /proc or once it is gone)."""
    try:
        fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_states(pid: int) -> list[str]:
    """The state letter of each thread of a process now (R, S, T for stopped, ...), from /proc; empty
    without /proc or once it is gone. A thread that ends meanwhile is left out."""
    states = []
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        with contextlib.suppress(OSError):
            states.append(_stat_fields(stat)[0])
    return states


def group_pids(pgid: int) -> list[int]:
    """The processes of a process group now (from /proc; empty without it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) == pgid:
                pids.append(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return pids


# ----------------------------------------------------------------------------------------------------
# Start, wait, stop
# ----------------------------------------------------------------------------------------------------


def spawn(
    cmd: Sequence[str],
    log: IO[bytes],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in a session of its own (so its pid is its process group's id) writing to ``log``."""
    return subprocess.Popen(
        list(cmd),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_ready(
    proc: subprocess.Popen[bytes] | None,
    is_ready: Callable[[], bool],
    *,
    timeout: float,
    poll_seconds: float,
    what: str,
    subject: str,
    log_tails: Callable[[], str],
    began: float | None = None,
) -> None:
    """Return once ``is_ready()``; raise :class:`DevstackError` with the logs' tails if ``proc`` exits first
    or ``timeout`` seconds pass after ``began`` (a ``time.monotonic()``; default now). ``what`` names the
    process, ``subject`` what is not ready."""
    deadline = (time.monotonic() if began is None else began) + timeout
    while True:
        code = proc.poll() if proc is not None else None
        if code is not None:
            raise DevstackError(f"{what} exited (code {code}) while starting.\n{log_tails()}")
        if is_ready():
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DevstackError(f"{subject} not ready after {timeout:.0f} s.\n{log_tails()}")
        # Waiting on the process (not a bare sleep) paces the probes and notices a crash immediately.
        if proc is None:
            time.sleep(min(poll_seconds, remaining))
        else:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=min(poll_seconds, remaining))


def _kill_group(pid: int) -> None:
    # The whole group: the preemption service's workers die with it, never orphaned.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def stop_child(proc: subprocess.Popen[bytes], grace: float) -> int:
    """SIGTERM a child started by :func:`spawn`; SIGKILL its process group if it outlives ``grace`` seconds.
    Returns its exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
    return proc.wait()


def stop_pid(pid: int, timeout: float) -> None:
    """SIGTERM a process that is not our child (started by another process with :func:`spawn`), then SIGKILL
    its process group if it outlives ``timeout`` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while process_cmdline(pid) is not None:
        if time.monotonic() >= deadline:
            _kill_group(pid)
            deadline = time.monotonic() + 10.0
        # Not our child, so there is nothing to wait() on: poll /proc at a short interval.
        time.sleep(0.1)


# ----------------------------------------------------------------------------------------------------
# One process owning a data directory
# ----------------------------------------------------------------------------------------------------


class ManagedProcess:
    """A long-running child that owns a data directory: started with :func:`spawn`, its output appended to
    a log, found again through a pid file (by another process too, such as the CLI's ``start``), stopped
    with SIGTERM and then SIGKILL, or left running with :meth:`detach`.

    Subclasses say what the process is (``_NAME`` for messages, ``_CLI_MODULE`` whose ``stop`` command
    stops it), how to recognise its command line (:meth:`_owns`), when it is ready (:meth:`is_ready`,
    :meth:`readiness_subject`),
    what to tell its clients (:attr:`endpoint`, :meth:`summary`) and which run files go when it stops
    (:meth:`_run_files`)."""

    _NAME = "process"
    _CLI_MODULE = ""
    _POLL_SECONDS = 0.1  # between readiness probes while starting
    _STOP_SECONDS = 15.0  # after SIGTERM, before SIGKILL

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = Path(data_dir).expanduser().resolve()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.last_startup_seconds: float | None = None

    @property
    def data_dir(self) -> Path:
        return self._data_dir

    @property
    def pid_file(self) -> Path:
        raise NotImplementedError

    @property
    def endpoint(self) -> str:
        """The one address clients need (what the CLI's ``start`` prints on stdout)."""
        raise NotImplementedError

    @property
    def logs(self) -> Path:
        """The log file, or the folder of log files."""
        raise NotImplementedError

    def summary(self) -> str:
        """Every address it serves, for people (the CLI's ``start`` and ``status``)."""
        return self.endpoint

    def readiness_subject(self) -> str:
        """What answers once it is ready, for messages, e.g. "Kafka broker on 127.0.0.1:9092"."""
        raise NotImplementedError

    def release(self) -> str:
        """What runs, e.g. "Kafka 4.1.1"."""
        return self._NAME

    @property
    def pid(self) -> int | None:
        """Pid of the running process: ours, or one started on this data_dir by another process (the CLI)."""
        if self._proc is not None and self._proc.poll() is None:
            return self._proc.pid
        return self._pid_from_file()

    def rss_bytes(self) -> int | None:
        pid = self.pid
        return rss_bytes(pid) if pid is not None else None

    def is_running(self) -> bool:
        return self.pid is not None

    def is_ready(self) -> bool:
        raise NotImplementedError

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM; SIGKILL if it has not exited after ``timeout`` seconds (default ``_STOP_SECONDS``).

        Also stops a process that another process (the CLI) started on this data_dir, found via the pid file.
        """
        timeout = self._STOP_SECONDS if timeout is None else timeout
        if self._proc is None:
            pid = self._pid_from_file()
            if pid is not None:
                stop_pid(pid, timeout)
            self._forget_run_files()
            return
        self._terminate(grace=timeout)

    def detach(self) -> None:
        """Let the process outlive this Python process (the CLI's ``start``, ``make up``).

        Afterwards this object (or any other on the same data_dir) finds it through the pid file.
        """
        proc, self._proc = self._proc, None
        if self._log is not None:  # the child has its own copy of the descriptor
            self._log.close()
            self._log = None
        # Popen.__del__ warns about a child that is still running, which here is the intent. Dropping the
        # last reference inside the filter runs __del__ right now (reference counting), so nothing leaks out.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            del proc

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self, timeout: float = 60.0) -> None:
        raise NotImplementedError

    # -- for subclasses ----------------------------------------------------------------------------------

    def _owns(self, cmdline: str) -> bool:
        """Whether a live process with this command line is ours (this kind, this data_dir)."""
        raise NotImplementedError

    def _log_tails(self) -> str:
        raise NotImplementedError

    def _run_files(self) -> list[Path]:
        """Files that exist only while the process runs."""
        return [self.pid_file]

    def _already_started(self) -> bool:
        """True if our child is running; raises if another process runs on this data_dir."""
        if self._proc is not None:
            if self._proc.poll() is None:
                return True
            self._release()  # it died on its own since the last start
        other = self._pid_from_file()
        if other is not None:
            raise DevstackError(
                f"a {self._NAME} (pid {other}) is already running on {self._data_dir}; "
                f"stop it with: {sys.executable} -m {self._CLI_MODULE} stop --data-dir {self._data_dir}"
            )
        return False

    def _launch(self, cmd: list[str], log_path: Path, began: float, timeout: float) -> None:
        """Start `cmd` with its output appended to `log_path`, record its pid, and wait until it is ready
        (or stop it and raise)."""
        self._log = log_path.open("ab")
        self._log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(cmd)}\n".encode())
        self._log.flush()
        self._proc = spawn(cmd, self._log, cwd=self._data_dir)
        self.pid_file.write_text(f"{self._proc.pid}\n")
        try:
            wait_ready(
                self._proc,
                self.is_ready,
                timeout=timeout,
                poll_seconds=self._POLL_SECONDS,
                what=self._NAME,
                subject=self.readiness_subject(),
                log_tails=self._log_tails,
                began=began,
            )
        except BaseException:
            self._terminate(grace=5.0)
            raise

    def _terminate(self, grace: float) -> None:
        if self._proc is None:
            return
        stop_child(self._proc, grace)
        self._release()
        self._forget_run_files()

    def _forget_run_files(self) -> None:
        for path in self._run_files():
            path.unlink(missing_ok=True)

    def _release(self) -> None:
        self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def _pid_from_file(self) -> int | None:
        """The pid in the pid file if that process is still ours.

        Checks the command line, not just liveness, so a stale file whose pid was reused by an unrelated
        process is never signalled.
        """
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        cmdline = process_cmdline(pid)
        if cmdline is None:
            return None
        if cmdline and not self._owns(cmdline):
            return None
        return pid


# ----------------------------------------------------------------------------------------------------
# The command line of a managed process
# ----------------------------------------------------------------------------------------------------


def run_cli(
    argv: Sequence[str] | None,
    *,
    module: str,
    description: str,
    install: tuple[str, Callable[[], str]],
    default_data_dir: Callable[[], Path],
    make: Callable[[argparse.Namespace], ManagedProcess],
    options: Callable[[argparse.ArgumentParser], None] = lambda parser: None,
    timeout: float = 60.0,
) -> int:
    """``python -m <module> install|start|status|stop``, worded the same for every managed process.

    - ``install`` runs ``install[1]`` (which returns what it installed) and prints that with the time taken;
    - ``start`` starts the process in the background (or finds it running), says so on stderr and prints
      only :attr:`ManagedProcess.endpoint` on stdout, so ``ADDRESS=$(python -m <module> start)`` works;
    - ``status`` prints ``up: ...`` and exits 0, or ``down`` / ``starting or unhealthy: ...`` and exits 1;
    - ``stop`` stops it (SIGTERM, then SIGKILL after ``--timeout``).

    ``make`` builds the process from the parsed arguments (``--data-dir`` already defaulted,
    ``args.command`` says which verb), ``options`` adds a process's own options to each verb but ``install``.
    A :class:`DevstackError` is printed as ``error: ...`` with exit code 2.
    """
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help=install[0])
    for name, text in [
        ("start", "start it in the background and print the address clients need"),
        ("stop", "stop the one started with `start`"),
        ("status", "say whether it is up (exit 0) or not (exit 1)"),
    ]:
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument(
            "--data-dir", type=Path, default=None, help="default: the one `make up` uses, in .cache/devstack"
        )
        options(cmd)
        cmd.add_argument("--timeout", type=float, default=timeout, help="seconds to wait for start/stop")
    args = parser.parse_args(argv)

    try:
        if args.command == "install":
            began = time.monotonic()
            installed = install[1]()
            print(f"{installed} ({time.monotonic() - began:.1f} s)")
            return 0

        if args.data_dir is None:
            args.data_dir = default_data_dir()
        process = make(args)
        pid = process.pid
        if args.command == "stop":
            process.stop(timeout=args.timeout)
            print(f"stopped (pid {pid})" if pid is not None else "not running", file=sys.stderr)
            return 0

        if args.command == "status":
            if pid is None:
                print("down")
                return 1
            if not process.is_ready():
                print(f"starting or unhealthy: pid {pid}, {process.readiness_subject()} does not answer")
                return 1
            rss = process.rss_bytes()
            rss_text = f", RSS {rss / 2**20:.0f} MiB" if rss is not None else ""
            print(f"up: {process.summary()} (pid {pid}{rss_text}, data {process.data_dir})")
            return 0

        # start
        if pid is not None and process.is_ready():
            print(f"already running (pid {pid})", file=sys.stderr)
            print(process.endpoint)
            return 0
        process.start(timeout=args.timeout)
        process.detach()
        stop_cmd = f"python -m {module} stop"
        if process.data_dir != default_data_dir().resolve():
            stop_cmd += f" --data-dir {shlex.quote(str(process.data_dir))}"
        print(
            f"{process.release()} up in {process.last_startup_seconds:.1f} s (pid {process.pid}): "
            f"{process.summary()}; logs in {process.logs}; stop with: {stop_cmd}",
            file=sys.stderr,
        )
        print(process.endpoint)
        return 0
    except DevstackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

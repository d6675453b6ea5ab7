"""Build a Go program from the Go module proxy into the install cache, once.

Jaeger (:mod:`podsched_devstack.jaeger`) and the upstream oracle (:mod:`podsched_devstack.upstream`) are
both Go programs built from source on first use. Both build the same way: with the Go on PATH and no other
toolchain (``GOTOOLCHAIN=local``), outside any workspace, statically (``CGO_ENABLED=0``), one build at a
time per binary (:func:`build_once`), into ``<binary>.partial-<pid>`` renamed into place only when it
succeeded, so an interrupted build never looks finished. :func:`inputs_hash` names a build after its
sources, so a changed source gives a fresh build and an unchanged one is reused.

Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .cache import install_lock, is_executable
from .process import DevstackError, tail

__all__ = ["build_once", "find_go", "go_build", "go_env", "go_version", "inputs_hash", "run_go", "version_tuple"]


def find_go(program: str, hint: str) -> str:
    """The ``go`` on PATH; raises saying that ``program`` is built with Go and how to install it."""
    go = shutil.which("go")
    if go is None:
        raise DevstackError(f"`go` is not on PATH. {program} is built from source with Go: {hint}")
    return go


def go_env(flags: Sequence[str] = ()) -> dict[str, str]:
    """The environment every build runs in: this process's, with the settings above, and the user's
    GOFLAGS without any ``-mod=`` (``-mod=vendor``, say, would break a build outside the user's module)
    followed by ``flags``."""
    env = dict(os.environ)
    kept = [flag for flag in env.get("GOFLAGS", "").split() if not flag.startswith("-mod=")]
    env.update(
        {
            "GO111MODULE": "on",
            "GOWORK": "off",  # a go.work above the build directory must not take part
            "GOTOOLCHAIN": "local",  # never download another Go toolchain behind the user's back
            "CGO_ENABLED": "0",  # a static binary; no C compiler needed
            "GOFLAGS": " ".join([*kept, *flags]),
        }
    )
    return env


def version_tuple(text: str) -> tuple[int, ...]:
    """``go1.26.8`` or ``1.24`` as (1, 26, 8) or (1, 24, 0), for comparing Go versions."""
    match = re.match(r"(?:go)?(\d+)(?:\.(\d+))?(?:\.(\d+))?", text.strip())
    if match is None:
        return ()
    return tuple(int(part or 0) for part in match.groups())


def run_go(cmd: list[str], cwd: Path, what: str, env: dict[str, str] | None = None) -> str:
    """Run a quick go command and return its stdout; raises with its last output lines if it fails."""
    result = subprocess.run(
        cmd, cwd=cwd, env=env or go_env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()
        raise DevstackError(
            f"{what} failed (exit {result.returncode}); command: {shlex.join(cmd)} (in {cwd})\n"
            + "\n".join(output[-40:])
        )
    return result.stdout


def go_version(go: str) -> str:
    """What ``go env GOVERSION`` says, e.g. ``go1.26.8``."""
    return run_go([go, "env", "GOVERSION"], Path.cwd(), "`go env GOVERSION`").strip()


def inputs_hash(files: Sequence[Path]) -> str:
    """A hash of the files' names and contents, in the order given: a build's cache key."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_once(binary: Path, build: Callable[[], None]) -> Path:
    """Run ``build`` (which writes ``binary``) unless ``binary`` exists; one process at a time builds it."""
    if is_executable(binary):
        return binary
    with install_lock(binary.parent / ".install.lock"):
        if not is_executable(binary):  # else another process finished the build while we waited
            build()
    return binary


def go_build(
    go: str,
    flags: Sequence[str],
    package: str,
    *,
    cwd: Path,
    binary: Path,
    log_path: Path,
    env: dict[str, str],
    program: str,
    progress: Callable[[str], None],
) -> None:
    """``go build <flags> -o <binary> <package>`` in ``cwd``, its output into ``log_path``.

    The build writes ``<binary>.partial-<pid>`` and renames it to ``binary`` only once it succeeded;
    ``progress`` hears a line a minute while it runs (a first build may take ten). Raises naming
    ``program`` with the log's tail if the build fails; an interrupted build leaves nothing behind.
    """
    began = time.monotonic()
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_name(f"{binary.name}.partial-{os.getpid()}")
    cmd = [go, "build", *flags, "-o", str(partial), package]
    with log_path.open("w") as log:
        log.write(f"$ {shlex.join(cmd)}  (in {cwd})\n")
        log.flush()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            while True:
                try:
                    code = proc.wait(timeout=60)
                    break
                except subprocess.TimeoutExpired:
                    progress(f"still compiling ({time.monotonic() - began:.0f} s so far)")
        except BaseException:
            proc.kill()
            proc.wait()
            partial.unlink(missing_ok=True)
            raise
    if code != 0 or not is_executable(partial):
        partial.unlink(missing_ok=True)
        raise DevstackError(
            f"building {program} failed (exit {code}); command: {shlex.join(cmd)} (in {cwd})\n" + tail(log_path, 40)
        )
    partial.rename(binary)

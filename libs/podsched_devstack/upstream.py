"""Build the upstream oracle: the real kube-scheduler on a cluster given as manifests.

The oracle is a small Go program in ``tests/oracle/upstream`` (its own module, requiring
``k8s.io/kubernetes`` v1.37.2 from the Go module proxy). It runs upstream's ``scheduler.New`` with
the default profile on a fake clientset and a simulated clock and prints what it decided as JSON;
``podsched simulate`` is compared against it. This module builds it into
``<cache>/upstream/<hash of go.mod, go.sum and the .go files>/oracle``, so a changed source gives a
fresh build and an unchanged one is reused.

CLI::

    python -m podsched_devstack.upstream install   # build (first time ~7 min, ~3 GB of memory)
    python -m podsched_devstack.upstream path      # print the binary's path (exit 1 if not built)

From Python: :func:`run_oracle` (one cluster from files) and :class:`OracleBatch` (one long-running
``oracle -batch`` process, a fresh cluster per call; about 10 ms per small cluster).

The oracle's answer, one JSON object::

    {"upstream": "v1.37.2",
     "pods": [{"namespace", "name", "nodeName", "nominatedNodeName", "preempted", "deleted"}, ...],
     "binds": [{"namespace", "name", "node", "time"}, ...],          # in bind order
     "nominations": [{"namespace", "name", "node", "time"}, ...],    # each time one was set
     "preempted": [{"namespace", "name", "node", "by", "time"}, ...]}  # by: "namespace/name"

``time`` is simulated seconds since the start (2026-01-01T00:00:00Z). Batch results also carry the
line's ``"id"``; a cluster that cannot be run gives ``{"id", "upstream", "error", "badInput"}``.

Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from .cache import cache_root, is_executable
from .gobuild import build_once, find_go, go_build, go_env, go_version, inputs_hash, version_tuple
from .process import DevstackError, repo_root

__all__ = [
    "INSTALL_COMMAND",
    "UPSTREAM_VERSION",
    "OracleBatch",
    "OracleInputError",
    "ensure_oracle_built",
    "oracle_binary",
    "oracle_source_dir",
    "run_oracle",
]

#: The k8s.io/kubernetes version the oracle runs (its go.mod pins it; this is for messages).
UPSTREAM_VERSION = "v1.37.2"
INSTALL_COMMAND = "make oracle-install  (or: .venv/bin/python -m podsched_devstack.upstream install)"
INSTALL_HINT = (
    "install Go 1.26 or newer (https://go.dev/dl/, e.g. go1.26.8.linux-amd64.tar.gz unpacked into /usr/local, "
    "with /usr/local/go/bin on PATH): k8s.io/kubernetes v1.37.2 needs go 1.26"
)
_SOURCE_RELPATH = Path("tests/oracle/upstream")


def _progress(message: str) -> None:
    print(f"[oracle] {message}", file=sys.stderr, flush=True)


def oracle_source_dir() -> Path:
    """The oracle's Go module in this checkout."""
    return repo_root() / _SOURCE_RELPATH


def _source_files(source: Path) -> list[Path]:
    files = [source / "go.mod", source / "go.sum", *sorted(source.glob("*.go"))]
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        raise DevstackError(f"the oracle's sources are incomplete: missing {', '.join(missing)}")
    return files


def source_hash(source: Path | None = None) -> str:
    """A hash of go.mod, go.sum and every .go file (names and contents): the build's cache key."""
    return inputs_hash(_source_files(source or oracle_source_dir()))


def _binary_for(digest: str) -> Path:
    return cache_root() / "upstream" / digest / "oracle"


def oracle_binary() -> Path:
    """The oracle built from the current sources; raises (saying how to build it) if there is none."""
    binary = _binary_for(source_hash())
    if not is_executable(binary):
        raise DevstackError(
            f"the upstream oracle is not built for the current sources (expected {binary}); build it with: "
            + INSTALL_COMMAND
        )
    return binary


def _go_env() -> dict[str, str]:
    # -mod=mod: go.sum may lack a hash the build needs on another Go patch release; let go add it (from the
    # module proxy and the checksum database) instead of failing.
    return go_env(["-mod=mod"])


def ensure_oracle_built(progress: Callable[[str], None] = _progress) -> Path:
    """Build the oracle for the current sources unless already built; return the binary's path.

    The first build compiles most of client-go and the scheduler: about 7 minutes and 3 GB of memory on
    2 cores (allow more on a busy machine); with Go's build cache warm a rebuild takes seconds. The build
    runs in a copy of the sources under the cache, so the checkout gets no build files.
    """
    source = oracle_source_dir()
    digest = source_hash(source)
    binary = _binary_for(digest)
    if is_executable(binary):
        progress(f"up to date: {binary}")
        return binary
    return build_once(binary, lambda: _build(find_go("The upstream oracle", INSTALL_HINT), source, binary, progress))


def _build(go: str, source: Path, binary: Path, progress: Callable[[str], None]) -> None:
    began = time.monotonic()
    version = go_version(go)
    if version_tuple(version) < (1, 26):
        raise DevstackError(
            f"k8s.io/kubernetes {UPSTREAM_VERSION} needs Go 1.26, but `{go}` is {version}: {INSTALL_HINT}"
        )
    # A private copy of the module: `go build -mod=mod` may touch go.mod/go.sum, never in the checkout.
    work = binary.parent / "src"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for path in _source_files(source):
        shutil.copy2(path, work / path.name)
    log_path = binary.parent / "build.log"
    progress(f"building the upstream oracle (k8s.io/kubernetes {UPSTREAM_VERSION}) with {version}")
    progress("the first build takes ~7 min and ~3 GB of memory; later ones reuse Go's build cache")
    progress(f"log: {log_path}")
    go_build(
        go,
        ["-trimpath"],
        ".",
        cwd=work,
        binary=binary,
        log_path=log_path,
        env=_go_env(),
        program="the upstream oracle",
        progress=progress,
    )
    progress(f"built in {time.monotonic() - began:.0f} s: {binary}")
    _prune(binary.parent.parent, keep=_KEEP_BUILDS)


#: Builds kept in ``<cache>/upstream`` (each about 100 MB): the newest few, for checkouts at other commits.
_KEEP_BUILDS = 3


def _prune(root: Path, keep: int) -> None:
    builds = sorted(
        (entry for entry in root.iterdir() if is_executable(entry / "oracle")),
        key=lambda entry: (entry / "oracle").stat().st_mtime,
        reverse=True,
    )
    for old in builds[keep:]:
        shutil.rmtree(old, ignore_errors=True)


class OracleInputError(DevstackError):
    """The oracle rejected the cluster (exit code 2): the message names the file, object and field."""


def run_oracle(
    files: Sequence[str | os.PathLike[str]],
    *,
    seed: int = 1,
    binary: Path | None = None,
    timeout: float = 120.0,
) -> dict[str, Any]:
    """Run the oracle on manifest files (applied in order, as ``podsched simulate -f``) and return its
    answer. ``seed`` 1 creates each file's nodes in file order; any other seed shuffles them with that seed,
    which changes which of equally scored nodes upstream picks (it also seeds math/rand). The same seed
    gives the same answer, except where upstream breaks a tie by Go map order (equally good preemption
    candidates)."""
    args = [str(binary or oracle_binary()), "-seed", str(seed)]
    for path in files:
        args += ["-f", os.fspath(path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode == 2:
        raise OracleInputError(proc.stderr.strip())
    if proc.returncode != 0:
        raise DevstackError(f"the oracle failed (exit {proc.returncode}): {proc.stderr.strip()}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


class OracleBatch:
    """One ``oracle -batch`` process; :meth:`run` sends a cluster (the texts of its files, in order) and
    returns the answer. Each call gets a fresh clientset and scheduler inside the process."""

    def __init__(self, *, seed: int = 1, binary: Path | None = None) -> None:
        # Closed in close(): the object outlives this method.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._proc = subprocess.Popen(
            [str(binary or oracle_binary()), "-batch", "-seed", str(seed)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )
        self._count = 0

    def run(self, texts: Sequence[str], *, cluster_id: str | None = None, seed: int | None = None) -> dict[str, Any]:
        """The oracle's answer for one cluster; raises :class:`OracleInputError` if it rejects the input."""
        self._count += 1
        line: dict[str, Any] = {"id": cluster_id or f"cluster-{self._count}", "files": list(texts)}
        if seed is not None:
            line["seed"] = seed
        stdin, stdout = self._proc.stdin, self._proc.stdout
        if stdin is None or stdout is None or self._proc.poll() is not None:
            raise DevstackError(f"the oracle process has ended: {self._stderr_tail()}")
        stdin.write(json.dumps(line) + "\n")
        stdin.flush()
        answer = stdout.readline()
        if not answer:
            raise DevstackError(f"the oracle process ended without an answer: {self._stderr_tail()}")
        result: dict[str, Any] = json.loads(answer)
        if "error" in result:
            if result.get("badInput"):
                raise OracleInputError(result["error"])
            raise DevstackError(f"the oracle could not run cluster {line['id']}: {result['error']}")
        return result

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-4000:].strip()

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m podsched_devstack.upstream",
        description=f"Build the upstream kube-scheduler oracle (k8s.io/kubernetes {UPSTREAM_VERSION}).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="build the oracle for the current sources into the cache (once)")
    sub.add_parser("path", help="print the built oracle's path (exit 1 if it is not built)")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            print(ensure_oracle_built())
            return 0
        print(oracle_binary())
        return 0
    except DevstackError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

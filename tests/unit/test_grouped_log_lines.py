"""The services' log lines are written in groups (telemetry.GroupedLineHandler): whole lines, in
order, a warning at once, and nothing older than FLUSH_SECONDS left unwritten, so a process killed
with SIGKILL loses only its last moment's lines."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import textwrap

from podsched_service.telemetry import GroupedLineHandler


class CountingStream(io.StringIO):
    """stderr as the handler sees it, counting the writes it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def logger_to(stream: CountingStream) -> tuple[logging.Logger, GroupedLineHandler]:
    handler = GroupedLineHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger(f"grouped-{id(stream)}")
    logger.propagate = False
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    return logger, handler


def test_lines_logged_in_a_loop_are_written_together_in_order_after_the_interval() -> None:
    stream = CountingStream()
    logger, _ = logger_to(stream)

    async def main() -> tuple[str, str]:
        for i in range(500):
            logger.info("line %d", i)
        before = stream.getvalue()
        await asyncio.sleep(GroupedLineHandler.FLUSH_SECONDS * 3)
        return before, stream.getvalue()

    before, after = asyncio.run(main())
    assert before == ""
    assert after == "".join(f"line {i}\n" for i in range(500))
    assert stream.writes == 1


def test_a_warning_is_written_at_once_with_the_lines_before_it() -> None:
    stream = CountingStream()
    logger, _ = logger_to(stream)

    async def main() -> str:
        logger.info("first")
        logger.warning("second")
        return stream.getvalue()

    assert asyncio.run(main()) == "first\nsecond\n"


def test_lines_outside_an_event_loop_are_written_at_once() -> None:
    stream = CountingStream()
    logger, _ = logger_to(stream)
    logger.info("starting")
    assert stream.getvalue() == "starting\n"


def test_a_group_that_reaches_the_size_bound_is_written_without_waiting() -> None:
    stream = CountingStream()
    logger, _ = logger_to(stream)
    line = "x" * 1000

    async def main() -> int:
        for _ in range(GroupedLineHandler.MAX_PENDING_BYTES // 1000 + 1):
            logger.info(line)
        return len(stream.getvalue())

    assert asyncio.run(main()) > GroupedLineHandler.MAX_PENDING_BYTES


def test_lines_pending_when_the_loop_closes_are_written_by_the_handler_flush() -> None:
    stream = CountingStream()
    logger, handler = logger_to(stream)

    async def main() -> None:
        logger.info("last words")

    asyncio.run(main())  # the loop is gone before the scheduled write
    handler.flush()  # what logging.shutdown does at exit
    assert stream.getvalue() == "last words\n"


def test_a_process_killed_with_sigkill_has_written_every_line_older_than_the_interval() -> None:
    program = textwrap.dedent(
        """
        import asyncio, logging, sys, time
        from podsched_service.telemetry import GroupedLineHandler, configure_logging

        configure_logging("podsched-test", "text")
        log = logging.getLogger("t")

        async def main():
            for i in range(2000):
                log.info("line %d", i)
            await asyncio.sleep(GroupedLineHandler.FLUSH_SECONDS * 3)
            print("logged", flush=True)
            await asyncio.sleep(60)

        asyncio.run(main())
        """
    )
    # stderr to a file: the parent reads it only after the kill, and 2000 lines overflow a pipe.
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=stderr, text=True, env=os.environ
        )
        try:
            assert process.stdout is not None and process.stdout.readline() == "logged\n"
        finally:
            process.send_signal(signal.SIGKILL)
            process.communicate(timeout=30)
        stderr.seek(0)
        messages = [line.rsplit(": ", 1)[1] for line in stderr.read().splitlines()]
    assert messages == [f"line {i}" for i in range(2000)]

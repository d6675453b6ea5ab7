"""`podsched`: a kubectl-like client. `simulate` runs the scheduling library in-process."""

from __future__ import annotations

import argparse
import sys

from podsched.api.errors import ApiError


def _simulate(args: argparse.Namespace) -> int:
    from podsched.config.scheduler_config import SchedulerConfig, parse_scheduler_config
    from podsched.simulator.engine import Simulator
    from podsched.simulator.output import render

    config = SchedulerConfig()
    if args.config:
        try:
            with open(args.config, encoding="utf-8") as handle:
                config = parse_scheduler_config(handle.read(), args.config)
        except OSError as error:
            print(f"error: cannot read --config {args.config}: {error.strerror}", file=sys.stderr)
            return 1
        except ApiError as error:
            print(f"error: invalid --config {args.config}: {error.message}", file=sys.stderr)
            return 1
    simulator = Simulator(config)
    for path in args.filename:
        try:
            simulator.apply_file(path)
        except OSError as error:
            print(
                f'error: the path "{path}" does not exist'
                if isinstance(error, FileNotFoundError)
                else f"error: cannot read {path}: {error.strerror}",
                file=sys.stderr,
            )
            return 1
        simulator.run_until_quiescent()
    sys.stdout.write(render(simulator.result(), args.output))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="podsched", description="Kubernetes-style pod priority and preemption.")
    commands = parser.add_subparsers(dest="command", required=True)
    simulate = commands.add_parser(
        "simulate",
        help="run the scheduling algorithm in one process on a simulated clock",
        description="Apply files in order; after each, schedule until nothing changes (grace periods and "
        "backoff elapse in simulated time). Prints every pod ever created, the events and the rejected objects.",
    )
    simulate.add_argument("-f", "--filename", action="append", required=True, help="manifest file (- for stdin)")
    simulate.add_argument("--config", help="a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration file")
    simulate.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    simulate.set_defaults(handler=_simulate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())

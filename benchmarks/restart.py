"""`make bench-restart`: each service's restart time against the length of the history behind the same live
cluster.

The live cluster is NODES nodes and LIVE pods. History is churn: pods created (ApplyBatch calls of 500,
bound), then deleted with no grace period, as the issue's reproduction does. At each point of --history
(cumulative churned pods) every service is restarted on its own (SIGTERM, then started again; the time is
from the start of the process to gRPC health SERVING, i.e. replaying the log included), then the whole
stack at once (what `make down && make up` does). Two logs:

- `compacted`: the topics as podsched configures them, with test-sized compaction settings
  (docs/topics.md) so the cleaner runs within seconds; the point is measured once the deleted pods'
  records are gone.
- `history`: the same topics with `min.compaction.lag.ms` of ten years: nothing is ever compacted, so
  every service replays the whole history, as it did before the object log was compacted.

One JSON line per (mode, history point, service) on stdout, and a PNG of restart seconds against history.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
from aiokafka import AIOKafkaConsumer, TopicPartition

from podsched_devstack.kafka import KafkaBroker, ensure_kafka_installed
from podsched_devstack.services import SERVICES, ServiceStack, StackSettings
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import mark_version, topics

APPLY_BATCH = 500
IN_FLIGHT = 4  # ApplyBatch calls at once
DELETES_IN_FLIGHT = 64
TEN_YEARS_MS = 10 * 365 * 86_400_000
COMPACT_SOON = {
    "PODSCHED_OBJECTS_SEGMENT_MS": "500",
    "PODSCHED_OBJECTS_MIN_CLEANABLE_DIRTY_RATIO": "0.01",
    "PODSCHED_OBJECTS_MIN_COMPACTION_LAG_MS": "0",
    "PODSCHED_OBJECTS_DELETE_RETENTION_MS": "1000",
}
MODES = {"compacted": COMPACT_SOON, "history": {"PODSCHED_OBJECTS_MIN_COMPACTION_LAG_MS": str(TEN_YEARS_MS)}}


def node(index: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{index}", "labels": labels or {}},
        "status": {"allocatable": {"cpu": "4000", "memory": "4000Gi", "pods": "5000"}},
    }


def pod(namespace: str, name: str) -> dict[str, Any]:
    resources = {"cpu": "10m", "memory": "10Mi"}
    container = {"name": "pause", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": resources}}
    spec = {"containers": [container], "terminationGracePeriodSeconds": 0}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


async def apply_all(stub: Any, documents: list[dict[str, Any]]) -> None:
    chunks = iter([documents[i : i + APPLY_BATCH] for i in range(0, len(documents), APPLY_BATCH)])

    async def worker() -> None:
        for chunk in chunks:
            requests = [api_pb2.ApplyRequest(object_json=json.dumps(d).encode()) for d in chunk]
            reply = await stub.ApplyBatch(api_pb2.ApplyBatchRequest(requests=requests), timeout=300)
            refused = [r.message for r in reply.results if r.code]
            if refused:
                raise RuntimeError(f"{len(refused)} objects refused, e.g. {refused[0]}")

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))


async def delete_all(stub: Any, namespace: str, names: list[str]) -> None:
    pending = iter(names)

    async def worker() -> None:
        for name in pending:
            request = api_pb2.DeleteRequest(resource="pods", name=name, namespace=namespace, grace_period_seconds=0)
            await stub.Delete(request, timeout=300)

    await asyncio.gather(*(worker() for _ in range(DELETES_IN_FLIGHT)))


class PodFollower:
    """Follows the object log: which pods of a namespace are bound, which are deleted."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.bound: set[tuple[str, str]] = set()
        self.deleted: set[tuple[str, str]] = set()

    async def run(self, stop: asyncio.Event) -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, isolation_level="read_committed", enable_auto_commit=False
        )
        await consumer.start()
        try:
            partition = TopicPartition(self.topic, 0)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            while not stop.is_set():
                for records in (await consumer.getmany(timeout_ms=100)).values():
                    for record in records:
                        if record.value is None or mark_version(record.key, record.value) is not None:
                            continue
                        change = events_pb2.ObjectChange.FromString(record.value)
                        key = (change.object.namespace, change.object.name)
                        if change.object.kind != "Pod":
                            continue
                        if change.type == events_pb2.ObjectChange.DELETED:
                            self.deleted.add(key)
                            self.bound.discard(key)
                        elif change.node_name:
                            self.bound.add(key)
                            self.deleted.discard(key)
        finally:
            await consumer.stop()


async def until(condition: Any, what: str, timeout: float, poke: Any = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout}s")
        if poke is not None:
            await poke()
        await asyncio.sleep(0.2)


async def count_records(bootstrap: str, topic: str) -> int:
    """Records Kafka holds on the topic now (read_committed; tombstones and marks included)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False
    )
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        await consumer.seek_to_beginning(partition)
        end = (await consumer.end_offsets([partition]))[partition]
        count = 0
        while await consumer.position(partition) < end:
            for records in (await consumer.getmany(partition, timeout_ms=200)).values():
                count += sum(1 for r in records if r.offset < end)
        return count
    finally:
        await consumer.stop()


def timed_start(stack: ServiceStack, names: tuple[str, ...]) -> float:
    began = time.monotonic()
    stack.start(names, timeout=600)
    return time.monotonic() - began


async def in_thread(call: Any, *args: Any) -> Any:
    return await asyncio.to_thread(call, *args)


async def run_mode(mode: str, broker: KafkaBroker, run_dir: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    prefix = f"restart{uuid.uuid4().hex[:8]}."
    objects_topic, events_topic = topics(prefix)
    stack = ServiceStack(
        StackSettings.on_free_ports(
            broker.bootstrap_servers,
            run_dir / prefix.rstrip("."),
            topic_prefix=prefix,
            workers=1,
            service_env={"binder": {**MODES[mode], "PODSCHED_TRANSACTIONAL_ID": f"binder-{prefix}"}},
        )
    )
    stack.start()
    follower = PodFollower(broker.bootstrap_servers, objects_topic)
    stop = asyncio.Event()
    follow = asyncio.create_task(follower.run(stop))
    channel = grpc.aio.insecure_channel(stack.server)
    stub = api_pb2_grpc.PodSchedStub(channel)
    results: list[dict[str, Any]] = []
    pokes = iter(range(10**9))

    async def poke() -> None:
        """A write that closes the active segment (only closed ones are compacted)."""
        await apply_all(stub, [node(0, {"poke": str(next(pokes))})])

    try:
        await apply_all(stub, [node(i) for i in range(args.nodes)])
        live = [pod("live", f"live-{i}") for i in range(args.live)]
        await apply_all(stub, live)
        await until(lambda: sum(1 for ns, _ in follower.bound if ns == "live") == args.live, "live pods bound", 600)
        churned = 0
        for point in sorted(set(args.history)):
            began = time.monotonic()
            while churned < point:
                size = min(args.round, point - churned)
                names = [f"churn-{churned + i}" for i in range(size)]
                phase = time.monotonic()
                await apply_all(stub, [pod("churn", name) for name in names])
                applied = time.monotonic()
                keys = {("churn", name) for name in names}
                await until(lambda k=keys: k <= follower.bound, f"{size} churn pods bound", 600)
                bound = time.monotonic()
                await delete_all(stub, "churn", names)
                await until(lambda k=keys: k <= follower.deleted, f"{size} churn pods deleted", 600)
                print(
                    f"{mode}: {churned + size} churned (apply {applied - phase:.1f} s, bind {bound - applied:.1f} s, "
                    f"delete {time.monotonic() - bound:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
                churned += size
            churn_seconds = time.monotonic() - began
            live_objects = args.nodes + args.live
            if mode == "compacted":
                compacted_by = time.monotonic() + args.compaction_timeout
                while await count_records(broker.bootstrap_servers, objects_topic) > 2 * live_objects + 50:
                    if time.monotonic() > compacted_by:
                        print(f"{mode}: compaction not done within {args.compaction_timeout}s", file=sys.stderr)
                        break
                    await poke()
                    await asyncio.sleep(0.5)
            objects_records = await count_records(broker.bootstrap_servers, objects_topic)
            events_records = await count_records(broker.bootstrap_servers, events_topic)
            common = {
                "mode": mode,
                "history_pods": churned,
                "live_nodes": args.nodes,
                "live_pods": args.live,
                "objects_records": objects_records,
                "events_records": events_records,
                "churn_seconds": round(churn_seconds, 1),
            }
            for name in SERVICES:
                await in_thread(stack.stop_one, name)
                seconds = await in_thread(timed_start, stack, (name,))
                results.append({**common, "service": name, "restart_seconds": round(seconds, 2)})
                print(json.dumps(results[-1]), flush=True)
            await channel.close()
            for name in reversed(SERVICES):
                await in_thread(stack.stop_one, name)
            seconds = await in_thread(timed_start, stack, SERVICES)
            channel = grpc.aio.insecure_channel(stack.server)
            stub = api_pb2_grpc.PodSchedStub(channel)
            results.append({**common, "service": "all", "restart_seconds": round(seconds, 2)})
            print(json.dumps(results[-1]), flush=True)
    finally:
        stop.set()
        await follow
        await channel.close()
        stack.stop()
    return results


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 4.5))
    styles = {"compacted": "-", "history": "--"}
    colors = dict(zip([*SERVICES, "all"], ["tab:blue", "tab:orange", "tab:green", "tab:red", "black"], strict=True))
    for mode in sorted({r["mode"] for r in results}):
        for service in [*SERVICES, "all"]:
            points = sorted(
                (r["history_pods"], r["restart_seconds"])
                for r in results
                if (r["mode"], r["service"]) == (mode, service)
            )
            if points:
                axis.plot(
                    *zip(*points, strict=True),
                    styles.get(mode, "-"),
                    color=colors[service],
                    marker="o",
                    label=f"{service} ({mode})",
                )
    axis.set_xlabel("pods created and deleted before the restart (history)")
    axis.set_ylabel("seconds from start to serving")
    live = results[0]
    axis.set_title(
        f"restart time, live cluster {live['live_nodes']} nodes + {live['live_pods']} pods "
        "(solid: compacted log, dashed: whole history kept)",
        fontsize=9,
    )
    axis.legend(fontsize=7, ncol=2)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


async def main_async(args: argparse.Namespace) -> int:
    if args.replot:
        # Several runs' JSON lines in one plot (each run is kept short on a shared machine).
        lines = [line for path in args.replot for line in path.read_text().splitlines() if line.startswith("{")]
        plot([json.loads(line) for line in lines], args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
        return 0
    ensure_kafka_installed()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="podsched-restart-") as tmp:
        broker = KafkaBroker(Path(tmp) / "kafka")
        broker.start(timeout=120)
        try:
            for mode in args.mode:
                results += await run_mode(mode, broker, Path(tmp) / "runs", args)
        finally:
            broker.stop()
    if results and args.plot:
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        plot(results, args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", action="append", choices=sorted(MODES), help="compacted, history (default: both)")
    parser.add_argument(
        "--history", type=int, action="append", help="churned pods at each measurement (cumulative; default 0 20000)"
    )
    parser.add_argument("--nodes", type=int, default=20, help="live nodes")
    parser.add_argument("--live", type=int, default=500, help="live pods")
    parser.add_argument("--round", type=int, default=5000, help="pods created (then deleted) at a time")
    parser.add_argument("--compaction-timeout", type=float, default=120.0, help="seconds to wait for compaction")
    parser.add_argument("--plot", type=Path, default=Path("docs/bench/restart.png"))
    parser.add_argument("--replot", type=Path, action="append", help="only draw the plot from these JSON lines files")
    args = parser.parse_args()
    args.mode = args.mode or ["history", "compacted"]
    args.history = args.history or [0, 20000]
    raise SystemExit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()

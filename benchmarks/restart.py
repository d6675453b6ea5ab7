"""`make bench-restart`: each service's restart time against the length of the history behind the same live
cluster.

The live cluster is --nodes nodes and --live pods (scheduled). History is churn through the public API:
--round pods created by ApplyBatch calls of 500, labelled with their round, then deleted with no grace
period by one DeleteCollection of that label (`podsched delete pods -l churn-round=N --grace-period 0
--force`; --churn-delete each: one Delete per pod, as the issue's reproduction did). The churned pods
are created with a nodeName (as a DaemonSet's are), so they need no scheduling cycle; --churn-scheduled
sends them through the scheduler instead (--churn-only: only the churn, its rate reported). At each point
of --history (cumulative churned pods) every service is restarted on its own (SIGTERM, then started
again; the time is from the start of the process to gRPC health SERVING, i.e. replaying the log
included; --repeat times, the median reported; for the queue also the time until it has loaded the
events, which it does after it serves), then the whole stack at once (what `make down && make
up` does). A second stack on the same broker holds the same live cluster on a fresh log, and each
restart of the churned stack's service alternates with one of the fresh stack's: both are timed under
the same load, which on a shared machine changes more between minutes than the log does. Each line
also has the records and the bytes the broker's log dir holds per topic, right after the churn and at
the measurement (after compaction). Two logs:

- `compacted`: the topics as podsched configures them, with test-sized compaction settings
  (docs/topics.md) so the cleaner runs within seconds; the point is measured once the deleted pods'
  records are gone.
- `history`: the same topics with `min.compaction.lag.ms` of ten years: nothing is ever compacted, so
  every service replays the whole history, as it did before the object log was compacted.

One JSON line per (mode, history point, service) on stdout, and a PNG of restart seconds against history.

    make bench-restart MODES=compacted HISTORY="0 100000" BENCH_ARGS="--nodes 5000 --live 30000 --round 10000"
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
from podsched_devstack.services import SERVICES, ServiceStack, StackSettings, scrape, value
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.events.v1 import events_pb2
from podsched_service.codec import mark_version, topics

APPLY_BATCH = 500
IN_FLIGHT = 4  # ApplyBatch calls at once
DELETES_IN_FLIGHT = 64  # Delete calls at once with --churn-delete each
ROUND_LABEL = "churn-round"  # a churned pod's round: the first pod number of its round
TEN_YEARS_MS = 10 * 365 * 86_400_000
COMPACT_SOON = {
    "PODSCHED_OBJECTS_SEGMENT_MS": "500",
    "PODSCHED_OBJECTS_MIN_CLEANABLE_DIRTY_RATIO": "0.01",
    "PODSCHED_OBJECTS_MIN_COMPACTION_LAG_MS": "0",
    "PODSCHED_OBJECTS_DELETE_RETENTION_MS": "1000",
}
EVENTS_LOADED = "podsched_replica_events_loaded"  # the queue's gauge: 1 once its events are loaded
MODES = {"compacted": COMPACT_SOON, "history": {"PODSCHED_OBJECTS_MIN_COMPACTION_LAG_MS": str(TEN_YEARS_MS)}}


def node(index: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{index}", "labels": labels or {}},
        "status": {"allocatable": {"cpu": "4000", "memory": "4000Gi", "pods": "5000"}},
    }


def pod(namespace: str, name: str, node_name: str = "", labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A pause pod; with `node_name` it is created bound (as a DaemonSet's or a static pod is) and
    needs no scheduling cycle."""
    resources = {"cpu": "10m", "memory": "10Mi"}
    container = {"name": "pause", "image": "registry.k8s.io/pause:3.9", "resources": {"requests": resources}}
    spec: dict[str, Any] = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if node_name:
        spec["nodeName"] = node_name
    metadata = {"name": name, "namespace": namespace, "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


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


async def delete_selected(stub: Any, namespace: str, selector: str, expected: int) -> None:
    """One DeleteCollection, no grace period: the binder deletes the pods in a transaction per 1,000."""
    request = api_pb2.DeleteCollectionRequest(
        resource="pods", namespace=namespace, label_selector=selector, grace_period_seconds=0
    )
    reply = await stub.DeleteCollection(request, timeout=600)
    if len(reply.deleted) != expected:
        raise RuntimeError(f"DeleteCollection {selector!r} deleted {len(reply.deleted)} pods, not {expected}")


async def delete_each(stub: Any, namespace: str, names: list[str]) -> None:
    """One Delete per pod (DELETES_IN_FLIGHT at once), as before DeleteCollection."""
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
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed", enable_auto_commit=False)
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


def topic_bytes(broker: KafkaBroker, topic: str) -> int:
    """Bytes the broker's log dir holds for the topic: its one partition's segments and indexes, as
    allocated on disk (what du counts; Kafka preallocates each index at 10 MiB, sparsely)."""
    directory = broker.log_dir / f"{topic}-0"
    return sum(f.stat().st_blocks * 512 for f in directory.iterdir() if f.is_file()) if directory.is_dir() else 0


def timed_start(stack: ServiceStack, names: tuple[str, ...]) -> float:
    began = time.monotonic()
    stack.start(names, timeout=600)
    return time.monotonic() - began


async def in_thread(call: Any, *args: Any) -> Any:
    return await asyncio.to_thread(call, *args)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def churning(follower: PodFollower) -> int:
    return sum(1 for namespace, _ in follower.bound if namespace == "churn")


async def churn_round(stub: Any, follower: PodFollower, first: int, size: int, args: argparse.Namespace) -> str:
    """Create `size` pods (ApplyBatch calls) labelled with their round and delete them again (grace
    period 0: one DeleteCollection of the round's label, or one Delete each with --churn-delete each);
    returns how long each phase took. The pods are created with a nodeName (as a DaemonSet's are)
    unless --churn-scheduled: the records on the log are the same, without a scheduling cycle per pod."""
    began = time.monotonic()
    names = [f"churn-{first + i}" for i in range(size)]
    node_of = (lambda i: f"node-{i % args.nodes}") if args.churn_bound else (lambda i: "")
    labels = {ROUND_LABEL: str(first)}
    await apply_all(stub, [pod("churn", name, node_of(first + i), labels) for i, name in enumerate(names)])
    applied = time.monotonic()
    await until(lambda: churning(follower) >= size, f"{size} churn pods bound", 600)
    bound = time.monotonic()
    if args.churn_delete == "each":
        await delete_each(stub, "churn", names)
    else:
        await delete_selected(stub, "churn", f"{ROUND_LABEL}={first}", size)
    answered = time.monotonic()
    await until(lambda: churning(follower) == 0, f"{size} churn pods deleted", 600)
    follower.deleted.clear()  # the follower's memory stays the size of a round
    ended = time.monotonic()
    rate = size / (ended - began)
    # The delete: until the API answered (every delete committed), then until this follower of the
    # object log has read them all.
    return (
        f"apply {applied - began:.1f} s, bind {bound - applied:.1f} s, delete {ended - bound:.1f} s "
        f"(answered in {answered - bound:.1f} s): {rate:.0f} pods/s"
    )


class MeasuredStack:
    """One stack of services on its own topics of the shared broker, with a follower of its object log
    and a client of its API."""

    def __init__(self, label: str, mode: str, broker: KafkaBroker, run_dir: Path) -> None:
        self.label, self.broker = label, broker
        prefix = f"restart{uuid.uuid4().hex[:8]}."
        self.objects_topic, self.events_topic = topics(prefix)
        self.stack = ServiceStack(
            StackSettings.on_free_ports(
                broker.bootstrap_servers,
                run_dir / prefix.rstrip("."),
                topic_prefix=prefix,
                workers=1,
                service_env={"binder": {**MODES[mode], "PODSCHED_TRANSACTIONAL_ID": f"binder-{prefix}"}},
            )
        )
        self.follower = PodFollower(broker.bootstrap_servers, self.objects_topic)
        self.stopping = asyncio.Event()
        self.following: asyncio.Task[None] | None = None
        self.channel: Any = None
        self.stub: Any = None
        self.pokes = iter(range(10**9))

    async def start(self) -> None:
        await in_thread(self.stack.start)
        self.following = asyncio.create_task(self.follower.run(self.stopping))
        self.connect()

    def connect(self) -> None:
        self.channel = grpc.aio.insecure_channel(self.stack.server)
        self.stub = api_pb2_grpc.PodSchedStub(self.channel)

    async def stop(self) -> None:
        self.stopping.set()
        if self.following is not None:
            await self.following
        if self.channel is not None:
            await self.channel.close()
        await in_thread(self.stack.stop)

    async def build_live(self, args: argparse.Namespace) -> None:
        """The live cluster: nodes, then pods (created bound, or scheduled with --live-scheduled)."""
        began = time.monotonic()
        await apply_all(self.stub, [node(i) for i in range(args.nodes)])
        node_of = (lambda i: "") if args.live_scheduled else (lambda i: f"node-{i % args.nodes}")
        await apply_all(self.stub, [pod("live", f"live-{i}", node_of(i)) for i in range(args.live)])
        bound = lambda: sum(1 for ns, _ in self.follower.bound if ns == "live") == args.live  # noqa: E731
        await until(bound, "live pods bound", 3600)
        print(f"{self.label}: live cluster up in {time.monotonic() - began:.1f} s", file=sys.stderr, flush=True)

    async def poke(self) -> None:
        """A write that closes the active segment (only closed ones are compacted)."""
        await apply_all(self.stub, [node(0, {"poke": str(next(self.pokes))})])

    async def compacted(self, live_objects: int, timeout: float) -> None:
        compacted_by = time.monotonic() + timeout
        while await count_records(self.broker.bootstrap_servers, self.objects_topic) > 2 * live_objects + 50:
            if time.monotonic() > compacted_by:
                print(f"{self.label}: compaction not done within {timeout}s", file=sys.stderr, flush=True)
                return
            await self.poke()
            await asyncio.sleep(0.5)

    def rss_mb(self) -> dict[str, float]:
        """Resident memory of each service's process group now, in MB, and their total."""
        by_service = {name: round(rss / 1e6, 1) for name, rss in self.stack.rss_bytes().items()}
        return {**by_service, "total": round(sum(by_service.values()), 1)}

    async def log_sizes(self) -> dict[str, int]:
        bootstrap = self.broker.bootstrap_servers
        return {
            "objects_records": await count_records(bootstrap, self.objects_topic),
            "events_records": await count_records(bootstrap, self.events_topic),
            "objects_bytes": topic_bytes(self.broker, self.objects_topic),
            "events_bytes": topic_bytes(self.broker, self.events_topic),
        }

    async def restart(self, names: tuple[str, ...]) -> tuple[float, float | None]:
        """Seconds from starting `names` again (after SIGTERM) until each serves, and, if the queue is
        one of them, until it has loaded the events too (it serves before: they load in the background)."""
        if "queue" in names:
            await self.channel.close()
        for name in reversed(names):
            await in_thread(self.stack.stop_one, name)
        began = time.monotonic()
        seconds: float = await in_thread(timed_start, self.stack, names)
        if "queue" not in names:
            return seconds, None
        self.connect()
        url = self.stack.metrics_url("queue")
        if (EVENTS_LOADED, frozenset()) not in scrape(url):
            return seconds, None  # a queue that loads its events before it serves (no such gauge)
        await until(lambda: value(scrape(url), EVENTS_LOADED) == 1, "queue events loaded", 600)
        return seconds, time.monotonic() - began


async def run_mode(mode: str, broker: KafkaBroker, run_dir: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Two stacks with the same live cluster on one broker: `fresh` keeps a fresh log, `churned` is churned
    to each history point. Each service of both is restarted in turn (fresh, churned, fresh, ...), so
    both are timed under the same load on a shared machine."""
    fresh = MeasuredStack("fresh", mode, broker, run_dir)
    churned_stack = MeasuredStack(mode, mode, broker, run_dir)
    # --churn-only measures the churn alone: no fresh stack, no restarts.
    stacks = (churned_stack,) if args.churn_only else (fresh, churned_stack)
    results: list[dict[str, Any]] = []
    try:
        for stack in stacks:
            await stack.start()
            await stack.build_live(args)
        fresh_sizes = {} if args.churn_only else await fresh.log_sizes()
        # The services' memory holding the live cluster, before any churn: what the cluster costs.
        live_rss = churned_stack.rss_mb()
        print(f"{mode}: services hold the live cluster in {live_rss['total']} MB", file=sys.stderr, flush=True)
        churned = 0
        for point in sorted(set(args.history)):
            began = time.monotonic()
            while churned < point:
                size = min(args.round, point - churned)
                phases = await churn_round(churned_stack.stub, churned_stack.follower, churned, size, args)
                churned += size
                elapsed = time.monotonic() - began
                print(f"{mode}: {churned} churned ({phases}; {elapsed:.0f} s so far)", file=sys.stderr, flush=True)
            churn_seconds = time.monotonic() - began
            if args.churn_only:
                line = {
                    "mode": mode,
                    "history_pods": churned,
                    "live_nodes": args.nodes,
                    "live_pods": args.live,
                    "churn_delete": args.churn_delete,
                    "churn_seconds": round(churn_seconds, 1),
                    "churn_pods_per_second": round(point / churn_seconds, 1) if point and churn_seconds else None,
                }
                results.append(line)
                print(json.dumps(line), flush=True)
                continue
            after_churn = {
                "objects_bytes_after_churn": topic_bytes(broker, churned_stack.objects_topic),
                "events_bytes_after_churn": topic_bytes(broker, churned_stack.events_topic),
            }
            if mode == "compacted":
                await churned_stack.compacted(args.nodes + args.live, args.compaction_timeout)
            common = {
                "mode": mode,
                "history_pods": churned,
                "live_nodes": args.nodes,
                "live_pods": args.live,
                "live_pods_created": "scheduled" if args.live_scheduled else "bound (nodeName)",
                "churn_pods_created": "bound (nodeName)" if args.churn_bound else "scheduled",
                "churn_delete": args.churn_delete,
                **await churned_stack.log_sizes(),
                **after_churn,
                "churn_seconds": round(churn_seconds, 1),
                "churn_pods_per_second": round(point / churn_seconds, 1) if point and churn_seconds else None,
                "fresh_log": {**fresh_sizes, "rss_mb": fresh.rss_mb()},
                # The same services after the churn (none restarted yet): bounded by the live cluster if
                # this is close to rss_mb_live and to the fresh log's.
                "rss_mb_live": live_rss,
                "rss_mb": churned_stack.rss_mb(),
            }
            for names in [(name,) for name in args.services] + [SERVICES]:
                times: dict[str, list[float]] = {"fresh": [], "churned": []}
                loaded: dict[str, list[float]] = {"fresh": [], "churned": []}
                for _ in range(args.repeat):
                    for label, stack in (("fresh", fresh), ("churned", churned_stack)):
                        serving, events_loaded = await stack.restart(names)
                        times[label].append(serving)
                        if events_loaded is not None:
                            loaded[label].append(events_loaded)
                line = {
                    **common,
                    "service": names[0] if len(names) == 1 else "all",
                    "restart_seconds": round(median(times["churned"]), 2),
                    "fresh_log_restart_seconds": round(median(times["fresh"]), 2),
                    "restart_seconds_each": [round(t, 2) for t in times["churned"]],
                    "fresh_log_restart_seconds_each": [round(t, 2) for t in times["fresh"]],
                    "rss_mb_after_restart": churned_stack.rss_mb(),
                    "fresh_log_rss_mb_after_restart": fresh.rss_mb(),
                }
                if loaded["churned"]:
                    # The queue serves before its events are loaded; this is when `podsched events` answers.
                    line["events_loaded_seconds"] = round(median(loaded["churned"]), 2)
                    line["fresh_log_events_loaded_seconds"] = round(median(loaded["fresh"]), 2)
                results.append(line)
                print(json.dumps(line), flush=True)
    finally:
        for stack in stacks:
            await stack.stop()
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
            lines = [r for r in results if (r["mode"], r["service"]) == (mode, service)]
            # The fresh stack's restarts, timed alongside, are the same live cluster with no history.
            fresh = [(0, r["fresh_log_restart_seconds"]) for r in lines if "fresh_log_restart_seconds" in r]
            measured = {(r["history_pods"], r["restart_seconds"]) for r in lines}
            points = sorted(measured if any(x == 0 for x, _ in measured) else measured | set(fresh[:1]))
            if points:
                axis.plot(
                    *zip(*points, strict=True),
                    styles.get(mode, "-"),
                    color=colors[service],
                    marker="o",
                    label=f"{service} ({mode})",
                )
    axis.axhline(10, color="grey", linewidth=0.8, linestyle=":")
    axis.set_xlabel("pods created and deleted before the restart (history; 0: the same live cluster, fresh log)")
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
    if results and args.plot and not args.churn_only:
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
    parser.add_argument(
        "--repeat", type=int, default=1, help="restarts of each service per point (the median is reported)"
    )
    parser.add_argument(
        "--live-scheduled", action="store_true", help="live pods go through the scheduler (default: created bound)"
    )
    parser.add_argument(
        "--churn-scheduled",
        dest="churn_bound",
        action="store_false",
        help="churned pods go through the scheduler (default: created with nodeName, no scheduling cycle)",
    )
    parser.add_argument(
        "--churn-delete",
        choices=("collection", "each"),
        default="collection",
        help="delete a round by one DeleteCollection of its label (default) or by one Delete per pod",
    )
    parser.add_argument(
        "--churn-only",
        action="store_true",
        help="only churn to each history point and report the churn rate (no fresh stack, no restarts)",
    )
    parser.add_argument(
        "--services",
        nargs="+",
        choices=SERVICES,
        default=list(SERVICES),
        help="the services restarted one at a time (the whole stack is restarted too; default: each)",
    )
    parser.add_argument("--plot", type=Path, default=Path("docs/bench/restart.png"))
    parser.add_argument("--replot", type=Path, action="append", help="only draw the plot from these JSON lines files")
    args = parser.parse_args()
    args.mode = args.mode or ["history", "compacted"]
    args.history = args.history or [0, 20000]
    raise SystemExit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()

"""A replicated Kafka cluster on loopback: three KRaft nodes (each a combined broker and controller),
every topic with one replica per node and `min.insync.replicas=2`.

A write the cluster acknowledged (acks=all) is on two nodes at least, so it survives the crash of any
one node, and the cluster keeps taking writes and electing partition leaders with one node down. The
controllers form a quorum of three: two must be up for the cluster to work at all.

    python -m podsched_devstack.kafka_cluster start|status|stop [--data-dir DIR] [--nodes 3]

`start` prints the bootstrap servers (every node's address, comma-separated). Each node keeps its
data, logs and ports in ``DIR/node-N``; starting again on the same directory reuses them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .kafka import DEFAULT_HEAP, KafkaBroker, new_cluster_id, recorded_ports
from .process import devstack_dir, free_ports

DEFAULT_NODES = 3


class KafkaCluster:
    """`nodes` KafkaBrokers that form one cluster, owning ``data_dir``."""

    def __init__(self, data_dir: Path, nodes: int = DEFAULT_NODES, heap: str = DEFAULT_HEAP) -> None:
        if nodes < 1:
            raise ValueError(f"nodes: must be at least 1, got {nodes}")
        self.data_dir = Path(data_dir).expanduser().resolve()
        node_dirs = [self.data_dir / f"node-{node}" for node in range(1, nodes + 1)]
        recorded = [recorded_ports(d) for d in node_dirs]
        if all(ports is not None for ports in recorded):
            ports = [p for p in recorded if p is not None]
        else:  # a new cluster (or a partial one, started afresh): every node gets new ports
            free = iter(free_ports(2 * nodes))
            ports = [(next(free), next(free)) for _ in node_dirs]
        voters = [(node, controller) for node, (_, controller) in enumerate(ports, start=1)]
        cluster_id = new_cluster_id()  # used only by nodes not formatted yet
        self.brokers = [
            KafkaBroker(
                node_dir, port, controller, heap, node_id=node, voters=voters, cluster_id=self._cluster_id(cluster_id)
            )
            for node, (node_dir, (port, controller)) in enumerate(zip(node_dirs, ports, strict=True), start=1)
        ]

    def _cluster_id(self, fresh: str) -> str:
        """The id the formatted nodes share, or `fresh` for a cluster none of whose nodes is formatted."""
        for meta in self.data_dir.glob("node-*/kraft-logs/meta.properties"):
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    return line.split("=", 1)[1].strip()
        return fresh

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(broker.bootstrap_servers for broker in self.brokers)

    def node(self, node_id: int) -> KafkaBroker:
        return self.brokers[node_id - 1]

    def start(self, timeout: float = 120.0) -> None:
        """Start every node that is not running, together (a node is ready only once a quorum of
        controllers is up), and return when all serve."""
        stopped = [broker for broker in self.brokers if not broker.is_running()]
        with ThreadPoolExecutor(max_workers=max(1, len(stopped))) as pool:
            for started in [pool.submit(broker.start, timeout) for broker in stopped]:
                started.result()

    def stop(self) -> None:
        with ThreadPoolExecutor(max_workers=len(self.brokers)) as pool:
            for stopped in [pool.submit(broker.stop) for broker in self.brokers]:
                stopped.result()

    def __iter__(self) -> Iterator[KafkaBroker]:
        return iter(self.brokers)

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def default_data_dir() -> Path:
    return devstack_dir("kafka-cluster")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m podsched_devstack.kafka_cluster", description=__doc__)
    parser.add_argument("command", choices=("start", "status", "stop"))
    parser.add_argument("--data-dir", type=Path, default=None, help="default: .cache/devstack/kafka-cluster")
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    args = parser.parse_args(argv)
    cluster = KafkaCluster(args.data_dir or default_data_dir(), args.nodes)
    if args.command == "start":
        cluster.start()
        for broker in cluster:
            broker.detach()
        print(cluster.bootstrap_servers)
    elif args.command == "stop":
        cluster.stop()
    else:
        for broker in cluster:
            state = f"running (pid {broker.pid})" if broker.is_running() else "stopped"
            print(f"node {broker.node_id}: {broker.bootstrap_servers} {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

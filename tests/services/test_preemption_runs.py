"""PostFilterRun (protos/podsched_proto/preemption/v1/preemption.proto): the preemption service decides a
run of preemptors in one request. Each later pod of the run must get exactly the decision the queue
used to get for it from a FindNodes and a PostFilter of its own, with the earlier decisions sent as
assumed nominations; and the run must stop before the first pod that fits somewhere.

The cluster is written, the queue is stopped, and the preemptors are written straight to the binder,
so nothing schedules them: both protocols are asked, over real gRPC, about the same unchanged cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc
import yaml
from conftest import new_settings

from live_api import Api, node_of, nominated
from manifest_dicts import COMMON, node, pdb, pod
from podsched_devstack.kafka import KafkaBroker
from podsched_devstack.services import ServiceStack, scrape, value
from podsched_proto.binder.v1 import binder_pb2, binder_pb2_grpc
from podsched_proto.filter.v1 import filter_pb2, filter_pb2_grpc
from podsched_proto.preemption.v1 import preemption_pb2, preemption_pb2_grpc
from stacks import running

# Five full 4-CPU nodes of 900m low-priority pods (one guarded by a PDB), and an 8-CPU node of four
# 2-CPU mid-priority pods, which only a high-priority pod may preempt.
LOW_NODES = [f"run-n{i}" for i in range(1, 6)]


def cluster(api: Api) -> None:
    api.apply_text(COMMON.read_text())
    documents: list[dict[str, Any]] = [node(name) for name in LOW_NODES] + [node("run-big", cpu="8")]
    for name in LOW_NODES:
        labels = {"app": "guarded"} if name == "run-n1" else None
        documents += [
            pod(f"{name}-low{k}", "low-priority", "900m", node_name=name, grace=0, labels=labels) for k in range(4)
        ]
    documents += [pod(f"big-mid{k}", "mid-priority", "2", node_name="run-big", grace=0) for k in range(4)]
    documents.append(pdb("guarded", 4, app="guarded"))
    api.apply_text(yaml.safe_dump_all(documents))


# The run, in queue order: preemptors of several kinds, then one small pod that fits in the 400m every
# low node has left, then one more preemptor the run must not reach.
RUN = [
    pod("pre-a", "high-priority", "3"),
    pod("pre-b", "high-priority", "3"),
    pod("never", "high-priority-nonpreempting", "3"),
    pod("pre-mid", "mid-priority", "3"),
    pod("pre-c", "high-priority", "3"),
    pod("pre-d", "high-priority", "3"),
    pod("pre-e", "high-priority", "3"),
    pod("small", "low-priority", "100m"),
    pod("pre-f", "high-priority", "3"),
]
FITS = "small"


def write_without_scheduling(stack: ServiceStack, api: Api) -> tuple[dict[str, str], int]:
    """The run's pods, stored while the queue is down; returns their UIDs by name and the resource
    version of the write."""
    api.wait(lambda: len(api.pods()) >= 24, what="the cluster's pods")
    stack.stop_one("queue")
    with grpc.insecure_channel(stack.settings.addresses["binder"]) as channel:
        binder = binder_pb2_grpc.BinderStub(channel)
        reply = binder.WriteMany(
            binder_pb2.WriteManyRequest(
                writes=[binder_pb2.WriteRequest(object_json=json.dumps(p).encode()) for p in RUN]
            ),
            timeout=30,
        )
    assert [o.code for o in reply.outcomes] == [0] * len(RUN), [o.message for o in reply.outcomes]
    uids = {}
    for outcome in reply.outcomes:
        stored = json.loads(outcome.response.object_json)
        uids[stored["metadata"]["name"]] = stored["metadata"]["uid"]
    return uids, max(o.response.resource_version for o in reply.outcomes)


def decision_fields(decision: preemption_pb2.PostFilterResponse) -> dict[str, Any]:
    return {
        "nominated": decision.nominated_node_name,
        "victims": [v.name for v in decision.victims],
        "clear": [p.name for p in decision.nominations_to_clear],
        "clear_own": decision.clear_own_nomination,
        "candidates": decision.candidates,
        "pdb_violations": decision.pdb_violations,
        "message": decision.message,
        "stale": decision.stale_filter_result,
    }


def assumed_after(
    name: str, uids: dict[str, str], decision: preemption_pb2.PostFilterResponse
) -> list[filter_pb2.Nomination]:
    """The nominations the queue assumes after a decision (services/podsched_queue/scheduler.py)."""
    if decision.nominated_node_name:
        return [filter_pb2.Nomination(pod_uid=uids[name], node_name=decision.nominated_node_name)] + [
            filter_pb2.Nomination(pod_uid=p.uid) for p in decision.nominations_to_clear
        ]
    return [filter_pb2.Nomination(pod_uid=uids[name])] if decision.clear_own_nomination else []


def as_one_run(stack: ServiceStack, uids: dict[str, str], version: int) -> preemption_pb2.PostFilterRunResponse:
    """RUN's pods as the queue sends them now: FindNodes until the first fits nowhere, then one
    PostFilterRun for it and every pod after it (dry_run FindNodes: the filter's round-robin start
    stays where it is, so every protocol in a test sees the same)."""
    names = [p["metadata"]["name"] for p in RUN]
    with (
        grpc.insecure_channel(stack.settings.addresses["filter"]) as filter_channel,
        grpc.insecure_channel(stack.settings.addresses["preemption"]) as preemption_channel,
    ):
        found = filter_pb2_grpc.FilterStub(filter_channel).FindNodes(
            filter_pb2.FindNodesRequest(
                pods=[filter_pb2.PodToPlace(uid=uids[n]) for n in names], min_resource_version=version, dry_run=True
            ),
            timeout=30,
        )
        assert not found.placements[0].node_name, "the run's first pod fits nowhere"
        run: preemption_pb2.PostFilterRunResponse = preemption_pb2_grpc.PreemptionStub(
            preemption_channel
        ).PostFilterRun(
            preemption_pb2.PostFilterRunRequest(
                first=preemption_pb2.PostFilterRequest(
                    pod=filter_pb2.PodToPlace(uid=uids[names[0]]),
                    filter_result=found.placements[0],
                    min_resource_version=version,
                    filter_resource_version=found.resource_version,
                ),
                next=[filter_pb2.PodToPlace(uid=uids[n]) for n in names[1:]],
            ),
            timeout=30,
        )
        return run


def first_decision(
    stack: ServiceStack, uids: dict[str, str], version: int, binds: list[filter_pb2.AssumedBind]
) -> preemption_pb2.PostFilterResponse:
    """pre-a's FindNodes and its PostFilterRun alone, with `binds` under way assumed in both, as the
    queue sends them while the Bind of the pods its FindNodes placed is in flight."""
    with (
        grpc.insecure_channel(stack.settings.addresses["filter"]) as filter_channel,
        grpc.insecure_channel(stack.settings.addresses["preemption"]) as preemption_channel,
    ):
        found = filter_pb2_grpc.FilterStub(filter_channel).FindNodes(
            filter_pb2.FindNodesRequest(
                pods=[filter_pb2.PodToPlace(uid=uids["pre-a"])],
                min_resource_version=version,
                dry_run=True,
                assumed_binds=binds,
            ),
            timeout=30,
        )
        assert not found.placements[0].node_name, "pre-a fits nowhere"
        run: preemption_pb2.PostFilterRunResponse = preemption_pb2_grpc.PreemptionStub(
            preemption_channel
        ).PostFilterRun(
            preemption_pb2.PostFilterRunRequest(
                first=preemption_pb2.PostFilterRequest(
                    pod=filter_pb2.PodToPlace(uid=uids["pre-a"]),
                    filter_result=found.placements[0],
                    min_resource_version=version,
                    filter_resource_version=found.resource_version,
                    assumed_binds=binds,
                )
            ),
            timeout=30,
        )
        return run.decisions[0].decision


def assert_binds_in_flight_count_for_one_request(stack: ServiceStack, uids: dict[str, str], version: int) -> None:
    """pre-f (3 CPU, high priority) assumed on the node pre-a would be nominated to: no eviction
    there makes room for both, so pre-a is nominated elsewhere; the next request without the bind
    decides as the first did (the assumption, and what the dry run kept of that node, is gone)."""
    alone = first_decision(stack, uids, version, [])
    assert alone.nominated_node_name and alone.victims
    bind = filter_pb2.AssumedBind(pod_uid=uids["pre-f"], node_name=alone.nominated_node_name)
    beside = first_decision(stack, uids, version, [bind])
    assert beside.nominated_node_name and beside.nominated_node_name != alone.nominated_node_name
    assert decision_fields(first_decision(stack, uids, version, [])) == decision_fields(alone)


def test_a_run_decides_each_preemptor_as_its_own_findnodes_and_postfilter_would_and_stops_at_a_pod_that_fits(
    stack: ServiceStack, api: Api
) -> None:
    cluster(api)
    uids, version = write_without_scheduling(stack, api)
    names = [p["metadata"]["name"] for p in RUN]
    with (
        grpc.insecure_channel(stack.settings.addresses["filter"]) as filter_channel,
        grpc.insecure_channel(stack.settings.addresses["preemption"]) as preemption_channel,
    ):
        filter_stub = filter_pb2_grpc.FilterStub(filter_channel)
        preemption = preemption_pb2_grpc.PreemptionStub(preemption_channel)

        def find(pending: list[str], assumed: list[filter_pb2.Nomination]) -> filter_pb2.FindNodesResponse:
            # dry_run: leave the filter's round-robin start where it is, so both protocols see the same.
            return filter_stub.FindNodes(
                filter_pb2.FindNodesRequest(
                    pods=[filter_pb2.PodToPlace(uid=uids[n]) for n in pending],
                    assumed_nominations=assumed,
                    min_resource_version=version,
                    dry_run=True,
                ),
                timeout=30,
            )

        # One FindNodes and one PostFilter per pod, as the queue did before runs.
        one_by_one: list[dict[str, Any]] = []
        rejectors: list[list[str]] = []
        assumed: list[filter_pb2.Nomination] = []
        pending = names
        while True:
            found = find(pending, assumed)
            failed = found.placements[0]
            if failed.node_name:  # the first pod that fits: where the run must stop
                break
            decision = preemption.PostFilter(
                preemption_pb2.PostFilterRequest(
                    pod=filter_pb2.PodToPlace(uid=uids[pending[0]]),
                    filter_result=failed,
                    min_resource_version=version,
                    filter_resource_version=found.resource_version,
                    assumed_nominations=assumed,
                ),
                timeout=30,
            )
            one_by_one.append(decision_fields(decision))
            rejectors.append(sorted(failed.rejector_plugins))
            assumed += assumed_after(pending[0], uids, decision)
            pending = pending[1:]
        assert pending[0] == FITS, f"the one-by-one cycles stopped at {pending[0]}"
    # The same pods as one run.
    run = as_one_run(stack, uids, version)
    decided = [decision_fields(d.decision) for d in run.decisions]
    assert len(decided) == names.index(FITS), "the run ends before the pod that fits"
    assert decided == one_by_one
    assert [sorted(d.filter_result.rejector_plugins) for d in run.decisions[1:]] == rejectors[1:]
    assert all(d.filter_result.num_all_nodes == 6 for d in run.decisions[1:])
    # What the decisions say. The nominations left once each decision's clearings are applied hold
    # one pod per node (the run saw each earlier nomination); the PDB-guarded node is never chosen,
    # since every preemptor had a candidate without a violation; the non-preempting pod is refused.
    holding: dict[str, str] = {}
    for name, decision in zip(names, decided, strict=False):
        for cleared in decision["clear"]:
            holding.pop(cleared, None)
        if decision["nominated"]:
            holding[name] = decision["nominated"]
    assert sorted(holding) == sorted({"pre-a", "pre-b", "pre-c", "pre-d", "pre-e"} | ({"pre-mid"} & set(holding)))
    assert len(set(holding.values())) == len(holding), holding
    assert "run-n1" not in holding.values() and all(d["pdb_violations"] == 0 for d in decided)
    never = decided[names.index("never")]
    assert not never["nominated"] and "preemptionPolicy=Never" in never["message"]
    # A Bind in flight counts for the run's PostFilter, for that request only.
    assert_binds_in_flight_count_for_one_request(stack, uids, version)


def test_a_batch_of_preemptors_goes_through_runs_and_binds_where_the_runs_nominated(
    stack: ServiceStack, api: Api
) -> None:
    cluster(api)
    write_without_scheduling(stack, api)
    stack.start_one("queue")  # rebuilt from the log: every preemptor pending at once, in one batch
    api.close()
    api = Api(stack.server)
    # The six high-priority preemptors go first and take room on the five unguarded nodes (two fit on
    # the 8-CPU one). The mid-priority preemptor is left only the PDB-guarded node and preempts there
    # at the cost of the budget (best effort); but once its victims are gone the non-preempting pod,
    # of higher priority, takes that room, as upstream lets it, and the mid-priority pod's nomination
    # is cleared. The small pod fits in what is left.
    high = ["pre-a", "pre-b", "pre-c", "pre-d", "pre-e", "pre-f"]

    def all_bound() -> dict[str, dict[str, Any]] | None:
        pods = api.pods()
        return pods if all(node_of(pods[n]) for n in [*high, "never", FITS]) else None

    pods = api.wait(all_bound, timeout=60, what="the preemptors, the non-preempting pod and the small pod bound")
    assert {node_of(pods[n]) for n in high} == {"run-n2", "run-n3", "run-n4", "run-n5", "run-big"}
    assert node_of(pods["never"]) == node_of(pods[FITS]) == "run-n1"
    api.wait(lambda: not nominated(api.pods()["pre-mid"]), what="the mid-priority pod's nomination cleared")
    assert not node_of(api.pods()["pre-mid"])
    samples = scrape(stack.metrics_url("preemption"))
    runs = value(samples, "podsched_preemption_run_pods_count")
    decided = value(samples, "podsched_preemption_run_pods_sum")
    assert runs >= 1 and decided > runs, f"{decided} pods in {runs} runs: no run decided more than one pod"
    api.close()


def test_with_every_dry_run_on_the_worker_pool_a_run_is_its_first_pod_only(kafka: KafkaBroker, tmp_path: Path) -> None:
    """PODSCHED_DRY_RUN=workers sends every dry run to the worker pool: the run does not go on to
    the later pods in-process (the queue filters them with FindNodes, as before runs)."""
    started = running(new_settings(kafka, tmp_path / "services", workers=1, extra_env={"PODSCHED_DRY_RUN": "workers"}))
    stack = next(started)
    api = Api(stack.server)
    try:
        cluster(api)
        uids, version = write_without_scheduling(stack, api)
        run = as_one_run(stack, uids, version)
        assert len(run.decisions) == 1
        decision = run.decisions[0].decision
        assert decision.nominated_node_name and len(decision.victims) >= 1
        # The workers assume the coordinator's binds under way as it does.
        assert_binds_in_flight_count_for_one_request(stack, uids, version)
    finally:
        api.close()
        started.close()


def test_batches_in_flight_together_never_preempt_one_node_twice(kafka: KafkaBroker, tmp_path: Path) -> None:
    """Batches of two: while one batch's failures are still being committed and read back, the next
    batch runs with their nominations assumed. Eight preemptors on six full nodes: six take a node
    each, evicting exactly three pods there, and the last two find nothing they may preempt."""
    settings = new_settings(kafka, tmp_path / "services", workers=0, extra_env={"PODSCHED_BATCH_SIZE": "2"})
    started = running(settings)
    stack = next(started)
    api = Api(stack.server)
    try:
        api.apply_text(COMMON.read_text())
        nodes = [f"full-{i}" for i in range(6)]
        documents: list[dict[str, Any]] = [node(name) for name in nodes]
        documents += [pod(f"{n}-low{k}", "low-priority", "900m", node_name=n, grace=0) for n in nodes for k in range(4)]
        api.apply_text(yaml.safe_dump_all(documents))
        api.wait(lambda: len(api.pods()) == 24, what="the low-priority pods")
        preemptors = [f"pre-{i}" for i in range(8)]
        api.apply_text(yaml.safe_dump_all([pod(name, "high-priority", "3") for name in preemptors]))

        def settled() -> dict[str, dict[str, Any]] | None:
            pods = api.pods()
            placed = [n for n in preemptors if node_of(pods[n])]
            return pods if len(placed) == 6 else None

        pods = api.wait(settled, timeout=60, what="six preemptors bound")
        assert sorted(node_of(pods[n]) for n in preemptors if node_of(pods[n])) == nodes
        preempted = [e.involved_object.name for e in api.events() if e.reason == "Preempted"]
        assert len(preempted) == len(set(preempted)) == 18, sorted(preempted)
        for n in nodes:
            assert sum(name.startswith(f"{n}-low") for name in preempted) == 3, n
    finally:
        api.close()
        started.close()

"""The scheduling algorithm's two execution strategies give the same answers: node by node (the
plugins' own methods) and on columns (the column strategy, podsched.fastpath; an optimisation only).

Random clusters (node sizes, extended resources, taints, cordons, labels; running pods with random
priorities, start times, requests and labels; PDBs; nominated pods) and random incoming pods are
scheduled by one SchedulingAlgorithm built node by node only and one built with its column strategy,
side by side; every field of the CycleResult (node, counts, FitError statuses and text, rejector
plugins, PostFilter result, preemption candidates) and the round-robin start index must be equal
after every cycle. Clusters above 100 nodes make percentageOfNodesToScore sample. Between cycles the
decision is applied to the shared NodeInfos (and nodes are relabelled, added and removed), so the
column strategy's incremental columns are exercised too, in both freshness modes. Whole simulations (many pods,
preemption with grace periods) are then run both ways and their pods and events compared, and so
are whole simulations with pod groups (GenericWorkload: gangs and basic groups whose pod-group cycles
assume each member for the next, rejected gangs, pod-group preemption).

Hypothesis draws the knobs of each scenario and a seed for the bulk of it, which keeps examples
cheap at 150 nodes; a failing example still shrinks to the smallest knobs and prints its seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from builders import make_node, make_pdb, make_pod, make_priority_class
from podsched.api.types import (
    DISRUPTION_MODE_ALL,
    DISRUPTION_MODE_SINGLE,
    SCHEDULING_POLICY_BASIC,
    SCHEDULING_POLICY_GANG,
    Affinity,
    LabelSelector,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    Pod,
    PodDisruptionBudget,
    PodGroup,
    PreferredSchedulingTerm,
)
from podsched.api.types import NodeAffinity as NodeAffinitySpec
from podsched.config.scheduler_config import SchedulerConfig
from podsched.fastpath import ColumnStrategy, VectorizedDryRun
from podsched.framework.cycle_state import CycleState
from podsched.framework.interface import ClusterView, NodeToStatus, PostFilterResult
from podsched.framework.node_info import NodeInfo, PodInfo, Snapshot
from podsched.framework.resource import pod_requests
from podsched.framework.status import Code, Status
from podsched.plugins.default_preemption import DefaultPreemption
from podsched.plugins.registry import build_algorithm
from podsched.preemption.evaluator import DefaultPreemptionArgs, sequential_dry_run
from podsched.queue.nominator import Nominator
from podsched.scheduler.schedule_one import CycleResult, SchedulingAlgorithm
from podsched.simulator.engine import Simulator

NOW = 50_000.0
PRIORITIES = (-5, 0, 0, 10, 100, 1000)
START_TIMES = (None, 100.0, 100.0, 200.0, 300.0)  # repeated values: ties broken by node pod order
CPU_MENU = ("0", "100m", "250m", "500m", "900m", "1", "1500m", "3")
MEMORY_MENU = ("0", "128Mi", "512Mi", "1Gi", "3Gi")
GPU = "example.com/gpu"

CONFIGS: dict[str, SchedulerConfig] = {
    "default": SchedulerConfig(),
    "sample 10% of nodes": SchedulerConfig(percentage_of_nodes_to_score=10),
    "score every node": SchedulerConfig(percentage_of_nodes_to_score=100),
    "candidates 40%/1": SchedulerConfig(preemption_args=DefaultPreemptionArgs(40, 1)),
    "candidates 0%/3": SchedulerConfig(preemption_args=DefaultPreemptionArgs(0, 3)),
    "no preemption": SchedulerConfig(preemption_enabled=False),
    "no BalancedAllocation": SchedulerConfig(
        disabled_plugins=frozenset({("score", "NodeResourcesBalancedAllocation")})
    ),
    "heavy taint and affinity weights": SchedulerConfig(score_weights=(("TaintToleration", 7), ("NodeAffinity", 5))),
    "NodeAffinity PreFilter off": SchedulerConfig(disabled_plugins=frozenset({("preFilter", "NodeAffinity")})),
}


# --- comparing outcomes --------------------------------------------------------------------------


def uids(pods: list[Pod]) -> list[str]:
    return [pod.uid for pod in pods]


def outcome(result: CycleResult) -> dict[str, Any]:
    """Everything a CycleResult says, in comparable form."""
    fit_error = result.fit_error
    statuses = None
    if fit_error is not None:
        node_to_status = fit_error.node_to_status
        statuses = (
            [(name, s.code, tuple(s.reasons), s.plugin) for name, s in node_to_status.statuses.items()],
            (node_to_status.absent.code, tuple(node_to_status.absent.reasons)),
            fit_error.num_all_nodes,
            fit_error.pre_filter_msg,
            fit_error.post_filter_msg,
        )
    post = result.post_filter
    post_status = result.post_filter_status
    return {
        "node": result.node_name,
        "evaluated": result.evaluated_nodes,
        "feasible": result.feasible_nodes,
        "error": result.error,
        "message": result.message,
        "rejectors": sorted(result.rejector_plugins),
        "statuses": statuses,
        "post_filter": post_filter_outcome(post, post_status) if post_status is not None else None,
    }


def post_filter_outcome(post: PostFilterResult | None, status: Status) -> tuple[Any, ...]:
    """Everything a PostFilter answer says, in comparable form."""
    return (
        status.code,
        tuple(status.reasons),
        status.plugin,
        None
        if post is None
        else (
            post.nominated_node_name,
            uids(post.victims),
            uids(post.lower_priority_nominated_pods),
            [(c.node_name, uids(c.victims), c.num_pdb_violations) for c in post.candidates],
        ),
    )


def assert_same(plain: CycleResult, fast: CycleResult, context: str) -> None:
    expected, actual = outcome(plain), outcome(fast)
    for key in expected:
        assert actual[key] == expected[key], f"{context}: {key} differs"


# --- random clusters ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Knobs:
    seed: int
    nodes: int
    pods_per_node: int
    fill: float  # running pods are added until this share of the node's cpu is requested
    pressure: float  # share of incoming pods that are big unconstrained preemptors
    packed: float  # with fill 1.0, share of nodes filled until no running pod fits any more
    taint_rate: float
    cordon_rate: float
    gpu_rate: float
    affinity_pods: bool  # some running pods carry pod (anti-)affinity: the fast path must step aside
    pdbs: int
    nominated: int
    config: str
    tie_rng: bool
    tracked: bool  # columns kept fresh by mark_dirty instead of generation checks
    cycles: int
    style: str = "mixed"  # "scores": equal nodes told apart by soft taints, labels and usage only


knobs = st.builds(
    Knobs,
    seed=st.integers(0, 2**32 - 1),
    nodes=st.one_of(st.integers(1, 12), st.integers(1, 12), st.integers(101, 150)),
    pods_per_node=st.sampled_from([0, 2, 4, 6, 8]),
    fill=st.sampled_from([0.3, 0.8, 1.0, 1.0]),
    pressure=st.sampled_from([0.0, 0.5, 1.0]),
    packed=st.just(0.7),
    taint_rate=st.sampled_from([0.0, 0.15, 0.5]),
    cordon_rate=st.sampled_from([0.0, 0.1]),
    gpu_rate=st.sampled_from([0.0, 0.3]),
    affinity_pods=st.sampled_from([False, False, False, True]),
    pdbs=st.integers(0, 3),
    nominated=st.integers(0, 4),
    config=st.sampled_from(sorted(CONFIGS)),
    tie_rng=st.booleans(),
    tracked=st.booleans(),
    cycles=st.integers(1, 4),
)


def random_node(rng: random.Random, name: str, k: Knobs) -> Node:
    if k.style == "scores":
        builder = make_node(name).capacity(cpu="4", memory="8Gi")
        for key in ("soft-a", "soft-b"):
            if rng.random() < 0.4:
                builder = builder.taint(key, rng.choice(["", "1"]), "PreferNoSchedule")
        for key, values in (("zone", "abc"), ("disk", "hs")):
            if rng.random() < 0.8:
                builder = builder.label(key, rng.choice(values))
        return builder.obj()
    builder = make_node(name).capacity(
        cpu=rng.choice(["1", "2", "4", "4", "8"]),
        memory=rng.choice(["2Gi", "4Gi", "8Gi", "32Gi"]),
        pods=rng.choice([2, 4, 110, 110]),
        ephemeral_storage=rng.choice(["10Gi", "100Gi"]),
    )
    if rng.random() < k.gpu_rate:
        builder = builder.scalar(GPU, rng.choice([0, 1, 2, 4]))
    if rng.random() < k.taint_rate:
        builder = builder.taint("dedicated", rng.choice(["a", "b"]), rng.choice(["NoSchedule", "PreferNoSchedule"]))
    if rng.random() < k.taint_rate / 2:
        builder = builder.taint("flaky", "", rng.choice(["NoExecute", "PreferNoSchedule"]))
    if rng.random() < k.cordon_rate:
        builder = builder.unschedulable()
    for key, values in (("zone", "abc"), ("disk", "hs"), ("gen", "123")):
        if rng.random() < 0.6:
            builder = builder.label(key, rng.choice(values))
    return builder.obj()


def random_running_pod(rng: random.Random, name: str, node: str, k: Knobs) -> Pod:
    builder = (
        make_pod(name)
        .uid(f"uid-{name}")
        .priority(rng.choice(PRIORITIES))
        .req(cpu=rng.choice(CPU_MENU[:6]), memory=rng.choice(MEMORY_MENU[:4]))
        .node(node)
    )
    if rng.random() < 0.2:
        builder = builder.req(ephemeral_storage=rng.choice(["1Gi", "5Gi"]))
    if rng.random() < k.gpu_rate:
        builder = builder.req(**{GPU: rng.choice([1, 2])})
    start = rng.choice(START_TIMES)
    if start is not None:
        builder = builder.start_time(start)
    if rng.random() < 0.6:
        builder = builder.label("app", rng.choice("xyz"))
    if rng.random() < 0.3:
        builder = builder.label("tier", rng.choice("ab"))  # a second key: pods matched by several PDBs
    if rng.random() < 0.1:
        builder = builder.terminating(NOW - 1)
    if k.affinity_pods and rng.random() < 0.2:
        builder = rng.choice(
            [
                lambda b: b.pod_anti_affinity("zone", app="x"),
                lambda b: b.pod_affinity("zone", app="y"),
            ]
        )(builder)
    return builder.obj()


def preferring_pod(rng: random.Random, name: str) -> Pod:
    """A pod whose score is decided by soft taints, preferred node affinity and resources."""
    builder = (
        make_pod(name)
        .uid(f"uid-{name}")
        .priority(100)
        .req(cpu=rng.choice(["0", "100m", "300m", "1"]), memory=rng.choice(["0", "100Mi", "1Gi"]))
    )
    for key in ("soft-a", "soft-b"):
        if rng.random() < 0.3:
            builder = builder.toleration(key, rng.choice(["", "1"]), rng.choice(["", "PreferNoSchedule", "NoSchedule"]))
    pod = builder.obj()
    if rng.random() < 0.7:
        preferred = tuple(
            PreferredSchedulingTerm(
                rng.choice([1, 2, 3, 10, 100]),
                NodeSelectorTerm((NodeSelectorRequirement(key, rng.choice(["In", "NotIn"]), (rng.choice(values),)),)),
            )
            for key, values in rng.sample([("zone", "abc"), ("disk", "hs")], rng.randint(1, 2))
        )
        pod = replace(
            pod, spec=replace(pod.spec, affinity=Affinity(node_affinity=NodeAffinitySpec(preferred=preferred)))
        )
    return pod


def random_incoming_pod(rng: random.Random, name: str, node_names: list[str], pressure: bool = False) -> Pod:
    """A pod to schedule. Under `pressure` it is a big, important, unconstrained pod: a preemptor."""
    if pressure:
        return (
            make_pod(name)
            .uid(f"uid-{name}")
            .priority(rng.choice([10, 100, 1000]))
            .req(cpu=rng.choice(["1", "1500m", "2"]), memory=rng.choice(["0", "512Mi", "1Gi"]))
            .obj()
        )
    builder = make_pod(name).uid(f"uid-{name}").priority(rng.choice((*PRIORITIES, 100, 1000, 1000)))
    if rng.random() < 0.9:
        builder = builder.req(
            cpu=rng.choice(["0", "100m", "500m", "1", "1500m", "2", "3"]),
            memory=rng.choice(["0", "128Mi", "512Mi", "1Gi"]),
        )
    if rng.random() < 0.05:
        builder = builder.req(cpu=rng.choice(["0", "16"]), memory=rng.choice(["0", "64Gi"]))  # fits nowhere
    if rng.random() < 0.15:
        builder = builder.req(ephemeral_storage=rng.choice(["1Gi", "200Gi"]))
    if rng.random() < 0.2:
        builder = builder.req(**{GPU: rng.choice([1, 3])})
    if rng.random() < 0.3:
        builder = builder.toleration(
            "dedicated", rng.choice(["a", "b"]), rng.choice(["", "NoSchedule", "PreferNoSchedule"])
        )
    if rng.random() < 0.1:
        builder = builder.toleration("", operator="Exists")
    if rng.random() < 0.1:
        builder = builder.toleration("node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule")
    if rng.random() < 0.2:
        builder = builder.node_selector(zone=rng.choice("abc"))
    if rng.random() < 0.15:
        builder = builder.node_affinity_in("disk", *rng.sample(["h", "s", "x"], rng.randint(1, 2)))
    if rng.random() < 0.1 and node_names:
        builder = builder.nominated(rng.choice([*node_names, "no-such-node"]))
    if rng.random() < 0.1:
        builder = builder.preemption_policy("Never")
    if rng.random() < 0.05:
        builder = builder.host_port(8080)  # NodePorts: plain path
    if rng.random() < 0.05:
        builder = builder.pod_anti_affinity("zone", app="x")  # InterPodAffinity: plain path
    if rng.random() < 0.05:
        builder = builder.spread(1, "zone", app="x")  # PodTopologySpread: plain path
    pod = builder.obj()
    if rng.random() < 0.2:
        preferred = tuple(
            PreferredSchedulingTerm(
                rng.choice([0, 1, 5, 50]),
                NodeSelectorTerm((NodeSelectorRequirement(key, "In", (rng.choice(values),)),)),
            )
            for key, values in rng.sample([("zone", "abc"), ("disk", "hs"), ("gen", "123")], rng.randint(1, 3))
        )
        required = None
        if rng.random() < 0.2 and node_names:  # matchFields pins names: plain path
            pinned = NodeSelectorRequirement("metadata.name", "In", (rng.choice(node_names),))
            required = (NodeSelectorTerm(match_fields=(pinned,)),)
        affinity = replace(pod.spec.affinity) if pod.spec.affinity else None
        node_affinity = NodeAffinitySpec(required=required, preferred=preferred)
        if affinity is not None:
            affinity = replace(affinity, node_affinity=node_affinity)
        else:
            affinity = Affinity(node_affinity=node_affinity)
        pod = replace(pod, spec=replace(pod.spec, affinity=affinity))
    return pod


def random_pdbs(rng: random.Random, count: int) -> list[PodDisruptionBudget]:
    pdbs = []
    for i in range(count):
        allowed = rng.choice([0, 0, 1, 2])
        if rng.random() < 0.3:
            pdb = make_pdb(f"pdb-{i}", allowed=allowed, tier=rng.choice("ab"))
        else:
            pdb = make_pdb(f"pdb-{i}", allowed=allowed, app=rng.choice("xyz"))
        if rng.random() < 0.2:
            pdb = replace(pdb, selector=LabelSelector())  # empty: matches nothing in the scheduler
        pdbs.append(pdb)
    return pdbs


@dataclass
class World:
    """A cluster shared by both algorithms (they only read it); the test applies decisions."""

    infos: list[NodeInfo]
    nominator: Nominator
    pdbs: list[PodDisruptionBudget]
    fast: SchedulingAlgorithm
    tracked: bool

    def snapshot(self) -> Snapshot:
        return Snapshot(self.infos)

    def changed(self, node_name: str) -> None:
        if self.tracked and self.fast.columns is not None:
            self.fast.columns.mark_dirty(node_name)

    def info(self, name: str) -> NodeInfo | None:
        return next((info for info in self.infos if info.name == name), None)


def build_world(k: Knobs, rng: random.Random) -> tuple[World, SchedulingAlgorithm]:
    infos = [NodeInfo(random_node(rng, f"n{i}", k)) for i in range(k.nodes)]
    for info in infos:
        full = k.fill == 1.0 and rng.random() < k.packed  # keep trying pods until nothing fits
        for j in range(3 * k.pods_per_node if full else rng.randint(0, k.pods_per_node)):
            running = random_running_pod(rng, f"{info.name}-p{j}", info.name, k)
            if info.requested.milli_cpu + pod_requests(running).milli_cpu > k.fill * info.allocatable.milli_cpu:
                if full:
                    continue
                break
            info.add_pod(PodInfo(running))
    nominator = Nominator()
    for i in range(k.nominated):
        waiting = (
            make_pod(f"waiting-{i}")
            .uid(f"uid-waiting-{i}")
            .priority(rng.choice(PRIORITIES))
            .req(cpu=rng.choice(CPU_MENU[:6]), memory=rng.choice(MEMORY_MENU[:3]))
            .obj()
        )
        if infos:
            nominator.add(PodInfo(waiting), rng.choice(infos).name)
    config = CONFIGS[k.config]
    offsets = random.Random(k.seed + 1)
    plain = build_algorithm(
        config,
        nominator,
        offset=lambda n: random.Random(offsets.random()).randrange(n),
        rng=random.Random(k.seed) if k.tie_rng else None,
        columns=False,
    )
    twin_offsets = random.Random(k.seed + 1)
    fast = build_algorithm(
        config,
        nominator,
        offset=lambda n: random.Random(twin_offsets.random()).randrange(n),
        rng=random.Random(k.seed) if k.tie_rng else None,
    )
    if k.tracked:
        columns_of(fast).track_changes()
    return World(infos, nominator, random_pdbs(rng, k.pdbs), fast, k.tracked), plain


def apply_decision(world: World, result: CycleResult) -> None:
    """Bind the pod, or evict the victims at once and nominate the preemptor."""
    pod = result.pod
    if result.node_name:
        info = world.info(result.node_name)
        assert info is not None
        info.add_pod(PodInfo(replace(pod, spec=replace(pod.spec, node_name=result.node_name))))
        world.nominator.remove(pod)
        world.changed(result.node_name)
    elif result.post_filter is not None and result.post_filter.nominated_node_name:
        node = result.post_filter.nominated_node_name
        info = world.info(node)
        assert info is not None
        for victim in result.post_filter.victims:
            assert info.remove_pod(victim)
        world.nominator.add(PodInfo(pod), node)
        world.changed(node)


def disturb(world: World, rng: random.Random, k: Knobs) -> None:
    """Change the cluster between cycles: relabel or taint a node, add one, remove one."""
    roll = rng.random()
    if roll < 0.25 and world.infos:
        info = rng.choice(world.infos)
        node = info.node
        labels = dict(node.metadata.labels, zone=rng.choice("abc"))
        info.set_node(replace(node, metadata=replace(node.metadata, labels=labels)))
        world.changed(info.name)
    elif roll < 0.4:
        world.infos.insert(rng.randint(0, len(world.infos)), NodeInfo(random_node(rng, f"added-{rng.random()}", k)))
    elif roll < 0.5 and len(world.infos) > 1:
        world.infos.pop(rng.randrange(len(world.infos)))


def describe(result: CycleResult) -> str:
    if result.node_name:
        return "scheduled"
    if result.post_filter_status is None:
        return "unschedulable, no PostFilter"
    if result.post_filter is None:
        return "unschedulable, preemption not eligible or error"
    if not result.post_filter.nominated_node_name:
        return "unschedulable, no preemption candidate"
    violations = any(c.num_pdb_violations for c in result.post_filter.candidates)
    return f"preemption nominated a node{' (PDB-violating candidates)' if violations else ''}"


# --- single cycles --------------------------------------------------------------------------------


def columns_of(algorithm: SchedulingAlgorithm) -> ColumnStrategy:
    columns = algorithm.columns
    assert isinstance(columns, ColumnStrategy)
    return columns


def post_filter_on_columns(
    fast: SchedulingAlgorithm,
    config: SchedulerConfig,
    state: CycleState,
    pod: Pod,
    diagnosis: NodeToStatus,
    view: ClusterView,
) -> tuple[tuple[PostFilterResult | None, Status], bool]:
    """DefaultPreemption on a given Filter outcome, as the preemption service runs it: the dry run on
    `fast`'s columns where they apply. Returns the answer and whether the columns decided."""
    vectorized = VectorizedDryRun(columns_of(fast), fallback=sequential_dry_run)
    preemption = DefaultPreemption(fast.framework, config.preemption_args, offset=lambda n: 0, executor=vectorized)
    answer = preemption.post_filter(state, pod, diagnosis, view)
    return answer, vectorized.vectorized_runs > 0


def run_cycles(k: Knobs, post_filter_alone: bool = False) -> None:
    """Schedule k.cycles random pods with both algorithms on one shared, changing cluster. With
    `post_filter_alone`, every failed cycle's Filter diagnosis is also handed to PostFilter alone,
    as the preemption service does: the dry run on columns must answer as node by node."""
    rng = random.Random(k.seed)
    world, plain = build_world(k, rng)
    fast = world.fast
    alone_plain = build_algorithm(CONFIGS[k.config], world.nominator, offset=lambda n: 0, columns=False)
    alone_fast = build_algorithm(CONFIGS[k.config], world.nominator, offset=lambda n: 0)
    for cycle in range(k.cycles):
        pressure = rng.random() < k.pressure
        if k.style == "scores":
            pod = preferring_pod(rng, f"incoming-{cycle}")
        else:
            pod = random_incoming_pod(rng, f"incoming-{cycle}", [info.name for info in world.infos], pressure)
        if rng.random() < 0.3:  # the pod may be nominated itself: Filter must skip it
            world.nominator.add(PodInfo(pod), rng.choice([info.name for info in world.infos] or ["none"]))
        snapshot = world.snapshot()
        handled_before = columns_of(fast).cycles
        expected = plain.schedule(pod, snapshot, world.pdbs, world.nominator, NOW)
        actual = fast.schedule(pod, snapshot, world.pdbs, world.nominator, NOW)
        context = f"seed={k.seed} cycle={cycle} config={k.config!r}"
        assert_same(expected, actual, context)
        assert fast.next_start_node_index == plain.next_start_node_index, context
        event("on columns" if columns_of(fast).cycles > handled_before else "node by node")
        event(f"{'over' if len(snapshot) > 100 else 'under'} 100 nodes")
        event(describe(expected))
        if post_filter_alone and expected.fit_error is not None and alone_plain.framework.post_filter_plugins:
            diagnosis = expected.fit_error.node_to_status
            state = CycleState()
            alone_plain.framework.run_pre_filter_plugins(state, pod, snapshot.node_info_list)
            view = ClusterView(snapshot, world.pdbs, world.nominator, NOW)
            want = alone_plain.framework.run_post_filter_plugins(state, pod, diagnosis, view)
            got, vectorized = post_filter_on_columns(alone_fast, CONFIGS[k.config], state, pod, diagnosis, view)
            event("PostFilter alone: fast path" if vectorized else "PostFilter alone: not for the fast path")
            assert post_filter_outcome(*got) == post_filter_outcome(*want), context
        apply_decision(world, expected)
        if rng.random() < 0.3:
            disturb(world, rng, k)


SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


@settings(max_examples=500, **SETTINGS)  # type: ignore[arg-type]
@given(knobs)
def test_the_fast_path_decides_every_cycle_exactly_like_the_plain_path(k: Knobs) -> None:
    run_cycles(k)


packed = st.builds(
    lambda k, config: replace(
        k, fill=1.0, pressure=1.0, packed=1.0, pods_per_node=max(k.pods_per_node, 4), pdbs=max(k.pdbs, 1), config=config
    ),
    knobs,
    # Small candidate limits make the violating / non-violating caps and the early stop matter.
    st.sampled_from(["default", "candidates 40%/1", "candidates 0%/3", "sample 10% of nodes"]),
)
scoring = knobs.map(lambda k: replace(k, style="scores", fill=0.8, pressure=0.0, pdbs=0, nominated=0))


@settings(max_examples=300, **SETTINGS)  # type: ignore[arg-type]
@given(packed)
def test_preemption_decisions_on_packed_clusters_are_exactly_the_plain_paths(k: Knobs) -> None:
    run_cycles(k)


@settings(max_examples=200, **SETTINGS)  # type: ignore[arg-type]
@given(packed)
def test_post_filter_alone_on_a_given_diagnosis_is_exactly_the_plain_evaluators(k: Knobs) -> None:
    run_cycles(k, post_filter_alone=True)


@settings(max_examples=250, **SETTINGS)  # type: ignore[arg-type]
@given(scoring)
def test_node_choice_by_scores_is_exactly_the_plain_paths(k: Knobs) -> None:
    run_cycles(k)


def run_of_alike_preemptors(k: Knobs) -> None:
    """A PostFilterRun's shape: preemptors of one template decided one after another, each
    decision's nomination (and its clearings) in the nominator before the next, its victims not gone
    yet; now and then a node changes between two of them (a record of the log applied), and every
    third one comes at another `now` (the next request: pods without a start time count as started
    now, before or after the others). The column strategy keeps each node's dry-run outcome for the
    next preemptor and recomputes the nodes whose pods, nominated load or `now` changed it: every
    decision must still be the plain path's."""
    rng = random.Random(k.seed)
    world, plain = build_world(k, rng)
    fast = world.fast
    template = random_incoming_pod(rng, "template", [], pressure=True)
    for cycle in range(4 * k.cycles):
        name = f"alike-{cycle}"
        pod = replace(template, metadata=replace(template.metadata, name=name, uid=f"uid-{name}"))
        snapshot = world.snapshot()
        now = (NOW, 150.0, 250.0)[cycle // 3 % 3]  # between the running pods' start times (100-300)
        expected = plain.schedule(pod, snapshot, world.pdbs, world.nominator, now)
        actual = fast.schedule(pod, snapshot, world.pdbs, world.nominator, now)
        context = f"seed={k.seed} cycle={cycle} config={k.config!r}"
        assert_same(expected, actual, context)
        event(describe(expected))
        if expected.node_name:
            apply_decision(world, expected)
        elif expected.post_filter is not None and expected.post_filter.nominated_node_name:
            world.nominator.add(PodInfo(pod), expected.post_filter.nominated_node_name)
            for cleared in expected.post_filter.lower_priority_nominated_pods:
                world.nominator.remove(cleared)
        if rng.random() < 0.2 and world.infos:  # a victim of an earlier decision gone, or a node changed
            info = rng.choice(world.infos)
            if info.pods and rng.random() < 0.7:
                assert info.remove_pod(info.pods[0].pod)
                world.changed(info.name)
            else:
                disturb(world, rng, k)


@settings(max_examples=200, **SETTINGS)  # type: ignore[arg-type]
@given(packed)
def test_a_run_of_alike_preemptors_is_decided_exactly_as_the_plain_path_decides_each(k: Knobs) -> None:
    run_of_alike_preemptors(k)


# --- the fast path is really used, and steps aside when it must ----------------------------------


def small_cluster(fast: bool) -> tuple[Any, Snapshot, Nominator]:
    infos = [NodeInfo(make_node(f"n{i}").capacity(cpu="2", memory="4Gi").obj()) for i in range(4)]
    for i, info in enumerate(infos):
        info.add_pod(PodInfo(make_pod(f"low-{i}").priority(0).req(cpu="1500m").node(info.name).start_time(i).obj()))
    nominator = Nominator()
    algorithm = build_algorithm(SchedulerConfig(), nominator, offset=lambda n: 1, columns=fast)
    return algorithm, Snapshot(infos), nominator


def test_a_resource_only_preemptor_is_decided_by_the_fast_path() -> None:
    fast, snapshot, nominator = small_cluster(fast=True)
    plain, _, _ = small_cluster(fast=False)
    pod = make_pod("preemptor").priority(100).req(cpu="1").obj()
    actual = fast.schedule(pod, snapshot, [], nominator, NOW)
    assert (columns_of(fast).cycles, columns_of(fast).declined) == (1, 0)
    assert_same(plain.schedule(pod, snapshot, [], nominator, NOW), actual, "preemptor")
    assert actual.post_filter is not None and actual.post_filter.nominated_node_name == "n3"


def test_a_pod_with_pod_affinity_and_a_cluster_with_affinity_pods_go_to_the_plain_path() -> None:
    fast, snapshot, nominator = small_cluster(fast=True)
    fast.schedule(make_pod("a").req(cpu="100m").pod_affinity("zone", app="x").obj(), snapshot, [], nominator, NOW)
    assert (columns_of(fast).cycles, columns_of(fast).declined) == (0, 1)
    snapshot.node_info_list[0].add_pod(PodInfo(make_pod("anti").pod_anti_affinity("zone", app="y").node("n0").obj()))
    fast.schedule(make_pod("b").req(cpu="100m").obj(), snapshot, [], nominator, NOW)
    assert (columns_of(fast).cycles, columns_of(fast).declined) == (0, 2)


@pytest.mark.parametrize("with_candidates", [True, False])
def test_a_stale_diagnosis_gives_the_plain_evaluators_answer_node_by_node(with_candidates: bool) -> None:
    """PostFilter alone on a diagnosis that calls every node Unschedulable, where the preemptor in
    fact fits on one node as it is (an older Filter outcome): that node is upstream's "expected at
    least one victim" error, in one dry-run chunk with real candidates and with a node that has no
    lower-priority pod; without the candidates, the error is the answer."""
    pods = {
        "n2": [("small", 0, "500m")],  # the preemptor fits beside it: no victim needed
        "n3": [("high", 1000, "1500m")],  # nothing the preemptor may evict
    }
    if with_candidates:
        pods.update({"n0": [("low-0", 0, "1500m")], "n1": [("low-1", 0, "1500m")]})
    infos = []
    for name, placed in pods.items():
        info = NodeInfo(make_node(name).capacity(cpu="2", memory="4Gi").obj())
        for i, (pod_name, priority, cpu) in enumerate(placed):
            info.add_pod(PodInfo(make_pod(pod_name).priority(priority).req(cpu=cpu).node(name).start_time(i).obj()))
        infos.append(info)
    snapshot, nominator = Snapshot(infos), Nominator()
    preemptor = make_pod("preemptor").priority(100).req(cpu="1").obj()
    diagnosis = NodeToStatus()
    for name in pods:
        diagnosis.set(name, Status(Code.UNSCHEDULABLE, ["Insufficient cpu"], "NodeResourcesFit"))
    plain = build_algorithm(SchedulerConfig(), nominator, offset=lambda n: 0, columns=False)
    fast = build_algorithm(SchedulerConfig(), nominator, offset=lambda n: 0)
    state = CycleState()
    plain.framework.run_pre_filter_plugins(state, preemptor, snapshot.node_info_list)
    view = ClusterView(snapshot, [], nominator, NOW)
    want = plain.framework.run_post_filter_plugins(state, preemptor, diagnosis, view)
    got, vectorized = post_filter_on_columns(fast, SchedulerConfig(), state, preemptor, diagnosis, view)
    assert vectorized and post_filter_outcome(*got) == post_filter_outcome(*want)
    if with_candidates:
        assert want[0] is not None and sorted(c.node_name for c in want[0].candidates) == ["n0", "n1"]
    else:
        assert want[1].code == Code.ERROR
        assert 'expected at least one victim pod on node "n2"' in want[1].message


# --- whole simulations ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    seed: int
    nodes: int
    waves: int
    density: float  # pods per node in each wave (at most max_wave_pods)
    pdbs: int
    random_offsets: bool
    affinity_rate: float = 0.05  # pods with pod anti-affinity send the cluster's cycles to the plain path
    max_wave_pods: int = 40


workloads = st.builds(
    Workload,
    seed=st.integers(0, 2**32 - 1),
    nodes=st.one_of(st.integers(1, 8), st.integers(2, 8), st.integers(2, 8), st.integers(100, 105)),
    waves=st.sampled_from([1, 2, 3, 3]),
    density=st.sampled_from([0.5, 1.0, 2.0, 3.0]),
    pdbs=st.integers(0, 2),
    random_offsets=st.booleans(),
)

CLASSES = (("p0", 0), ("p10", 10), ("p100", 100), ("p1000", 1000))


def workload_objects(w: Workload) -> list[list[Any]]:
    """The workload's objects, wave by wave (built afresh for each simulator: apply mutates)."""
    rng = random.Random(w.seed)
    setup: list[Any] = [make_priority_class(name, value) for name, value in CLASSES]
    setup.append(make_priority_class("p500-never", 500, policy="Never"))
    for i in range(w.nodes):
        node = make_node(f"node-{i}").capacity(cpu=rng.choice(["2", "4"]), memory=rng.choice(["8Gi", "32Gi"]))
        if rng.random() < 0.2:
            node = node.scalar(GPU, rng.choice([1, 2]))
        if rng.random() < 0.15:
            node = node.taint("dedicated", rng.choice("ab"), rng.choice(["NoSchedule", "PreferNoSchedule"]))
        if rng.random() < 0.5:
            node = node.label("zone", rng.choice("abc"))
        setup.append(node.obj())
    for i in range(w.pdbs):
        setup.append(make_pdb(f"pdb-{i}", allowed=rng.choice([0, 1]), app=rng.choice("xy")))
    waves = [setup]
    for wave in range(w.waves):
        objects: list[Any] = []
        for i in range(min(w.max_wave_pods, max(1, round(w.nodes * w.density)))):
            name = f"w{wave}-{i}"
            builder = (
                make_pod(name)
                .uid(f"uid-{name}")
                .priority_class(
                    "p500-never" if rng.random() < 0.1 else rng.choice([n for n, _ in CLASSES[wave : wave + 2]])
                )
                .req(cpu=rng.choice(["250m", "500m", "1", "1500m", "2"]), memory=rng.choice(MEMORY_MENU[1:4]))
                .grace(rng.choice([0, 0, 5, 30]))
            )
            if rng.random() < 0.5:
                builder = builder.label("app", rng.choice("xy"))
            if rng.random() < 0.2:
                builder = builder.toleration("dedicated", rng.choice("ab"))
            if rng.random() < 0.1:
                builder = builder.req(**{GPU: 1})
            if rng.random() < w.affinity_rate:
                builder = builder.pod_anti_affinity("zone", app="x")
            objects.append(builder.obj())
        waves.append(objects)
    return waves


def simulate(sim: Simulator, waves: list[list[Any]]) -> Simulator:
    """Each wave applied, then scheduled until nothing changes (the objects are the run's own: build
    them anew for each simulator)."""
    for objects in waves:
        for obj in objects:
            sim.cluster.apply(obj)
        sim.run_until_quiescent(max_cycles=2000)
    return sim


def offsets(w: Workload) -> Callable[[int], int] | None:
    if not w.random_offsets:
        return None
    draws = random.Random(w.seed)
    return lambda n: draws.randrange(n)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads)
def test_whole_simulations_end_the_same_with_the_fast_path(w: Workload) -> None:
    plain = simulate(Simulator(offset=offsets(w), columns=False), workload_objects(w))
    fast = simulate(Simulator(offset=offsets(w)), workload_objects(w))
    assert fast.cycles == plain.cycles
    assert fast.result() == plain.result()
    assert fast.algorithm.next_start_node_index == plain.algorithm.next_start_node_index
    event("columns used" if columns_of(fast.algorithm).cycles else "no cycle on columns")
    event("preemption happened" if any(cycle.victims for cycle in plain.cycles) else "no preemption")


@pytest.mark.parametrize("nodes", [3, 120])
def test_a_simulation_with_waves_of_preemptors_is_mostly_scheduled_by_the_fast_path(nodes: int) -> None:
    big = nodes > 100
    w = Workload(11, nodes, 2 if big else 3, 2.5 if big else 3.0, 1, True, affinity_rate=0, max_wave_pods=300)
    plain = simulate(Simulator(offset=offsets(w), columns=False), workload_objects(w))
    fast = simulate(Simulator(offset=offsets(w)), workload_objects(w))
    assert fast.cycles == plain.cycles
    assert fast.result() == plain.result()
    columns = columns_of(fast.algorithm)
    assert columns.cycles > 2 * columns.declined
    assert any(cycle.victims for cycle in fast.cycles)


def test_a_pod_violating_one_budget_leaves_the_next_budgets_allowance_on_both_paths() -> None:
    """Upstream's FilterVictimsWithPDBViolation stops at a pod's first PDB that goes below zero: "first"
    violates "db" and takes nothing from "web", so "second" (counted after it, being less important)
    still fits "web"'s allowance: evicting it violates no PDB."""
    node = make_node("n1").capacity(cpu="2", pods="110").obj()
    first = make_pod("first").uid("first").priority(2).req(cpu="1").label("app", "db").label("tier", "web")
    second = make_pod("second").uid("second").priority(1).req(cpu="1").label("tier", "web")
    info = NodeInfo(node)
    for pod in (first.node("n1").obj(), second.node("n1").obj()):
        info.add_pod(PodInfo(pod))
    pdbs = [make_pdb("db", allowed=0, app="db"), make_pdb("web", allowed=1, tier="web")]
    preemptor = make_pod("p").uid("p").priority(100).req(cpu="1").obj()
    outcomes = []
    for columns in (False, True):
        algorithm = build_algorithm(SchedulerConfig(), Nominator(), offset=lambda n: 0, columns=columns)
        result = algorithm.schedule(preemptor, Snapshot([info]), pdbs, Nominator(), NOW)
        assert result.post_filter is not None and result.post_filter.nominated_node_name == "n1"
        assert [(c.node_name, uids(c.victims), c.num_pdb_violations) for c in result.post_filter.candidates] == [
            ("n1", ["second"], 0)
        ], f"columns={columns}"
        outcomes.append(outcome(result))
    assert outcomes[0] == outcomes[1]


# --- whole simulations with pod groups (GenericWorkload) ------------------------------------------

GENERIC_WORKLOAD = SchedulerConfig(feature_gates=(("GenericWorkload", True),))


@dataclass(frozen=True)
class GangWorkload:
    seed: int
    nodes: int
    waves: int
    groups: int  # pod groups in each wave, beside as many ungrouped pods
    random_offsets: bool


gang_workloads = st.builds(
    GangWorkload,
    seed=st.integers(0, 2**32 - 1),
    nodes=st.one_of(st.integers(1, 6), st.integers(2, 8), st.integers(100, 104)),
    waves=st.sampled_from([1, 2, 3]),
    groups=st.integers(1, 6),
    random_offsets=st.booleans(),
)


def gang_workload_objects(w: GangWorkload) -> list[list[Any]]:
    """Nodes, then waves of gangs and basic groups (each a few pods of one priority, some too big to
    fit whole, so later and higher waves preempt whole groups) mixed with ungrouped pods."""
    rng = random.Random(w.seed)
    setup: list[Any] = [make_priority_class(name, value) for name, value in CLASSES]
    for i in range(w.nodes):
        node = make_node(f"node-{i}").capacity(cpu=rng.choice(["2", "4"]), memory="16Gi", pods=rng.choice([4, 110]))
        if rng.random() < 0.15:
            node = node.taint("dedicated", "a", rng.choice(["NoSchedule", "PreferNoSchedule"]))
        setup.append(node.obj())
    waves = [setup]
    for wave in range(w.waves):
        objects: list[Any] = []
        for g in range(w.groups):
            name = f"g{wave}-{g}"
            class_name, _ = rng.choice(CLASSES[wave : wave + 2])
            size = rng.randint(1, 4)
            is_gang = rng.random() < 0.75
            objects.append(
                PodGroup(
                    ObjectMeta(name=name, namespace="default"),
                    SCHEDULING_POLICY_GANG if is_gang else SCHEDULING_POLICY_BASIC,
                    rng.randint(1, size) if is_gang else 0,
                    DISRUPTION_MODE_ALL if rng.random() < 0.3 else DISRUPTION_MODE_SINGLE,
                    priority_class_name=class_name,
                )
            )
            cpu = rng.choice(["250m", "500m", "1", "1500m"])
            for m in range(size):
                member = make_pod(f"{name}-{m}").uid(f"uid-{name}-{m}").priority_class(class_name).req(cpu=cpu)
                if rng.random() < 0.2:
                    member = member.toleration("dedicated", "a")
                objects.append(member.group(name).obj())
            loose = make_pod(f"w{wave}-{g}").uid(f"uid-w{wave}-{g}").priority_class(rng.choice(CLASSES)[0])
            objects.append(loose.req(cpu=rng.choice(["250m", "1", "2"])).grace(rng.choice([0, 5])).obj())
        waves.append(objects)
    return waves


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gang_workloads)
def test_whole_simulations_with_pod_groups_end_the_same_with_the_fast_path(w: GangWorkload) -> None:
    offsets_of = offsets(Workload(w.seed, w.nodes, w.waves, 1.0, 0, w.random_offsets))
    plain = simulate(Simulator(GENERIC_WORKLOAD, offset=offsets_of, columns=False), gang_workload_objects(w))
    offsets_of = offsets(Workload(w.seed, w.nodes, w.waves, 1.0, 0, w.random_offsets))
    fast = simulate(Simulator(GENERIC_WORKLOAD, offset=offsets_of), gang_workload_objects(w))
    assert fast.cycles == plain.cycles
    assert fast.result() == plain.result()
    assert fast.algorithm.next_start_node_index == plain.algorithm.next_start_node_index
    event("columns used" if columns_of(fast.algorithm).cycles else "no cycle on columns")
    result = fast.result()
    preempted = any("by PodGroup" in e["message"] for e in result["events"])
    event("a group preempted" if preempted else "no group preemption")
    conditions = [c["status"] for g in result["podGroups"] for c in g.get("status", {}).get("conditions", [])]
    event("a group rejected" if "False" in conditions else "no group rejected")

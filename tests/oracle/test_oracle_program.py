"""The upstream oracle itself (tests/oracle/upstream): the real kube-scheduler v1.37.2 on hand-written
clusters whose upstream answer is certain, whatever upstream's random tie-breaks pick.

The oracle is built on first use (``make oracle-install``; ~7 min the first time, then cached by source
hash). Without Go the build fails with a message saying how to install it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from podsched_devstack.upstream import OracleBatch, OracleInputError, ensure_oracle_built
from podsched_devstack.upstream import run_oracle as run_files

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "high-mid-low"

CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-never}
value: 1000
preemptionPolicy: Never
"""


def node(name: str, cpu: str = "2") -> str:
    return f"""
---
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status:
  capacity: {{cpu: "{cpu}", memory: 8Gi, pods: "110"}}
"""


def pod(name: str, cpu: str, priority_class: str, node_name: str = "", labels: str = "{}", grace: int = 30) -> str:
    placement = f"\n  nodeName: {node_name}" if node_name else ""
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {labels}}}
spec:
  priorityClassName: {priority_class}
  terminationGracePeriodSeconds: {grace}{placement}
  containers:
  - name: main
    image: registry.k8s.io/pause:3.9
    resources:
      requests: {{cpu: "{cpu}", memory: 100Mi}}
"""


@pytest.fixture(scope="module")
def oracle() -> Path:
    return ensure_oracle_built()


def run_oracle(oracle: Path, files: Sequence[Path], expect_code: int = 0) -> subprocess.CompletedProcess[str]:
    args = [str(oracle)]
    for path in files:
        args += ["-f", str(path)]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == expect_code, f"exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}"
    return proc


def decide(oracle: Path, tmp_path: Path, *texts: str) -> dict[str, Any]:
    files = []
    for i, text in enumerate(texts):
        path = tmp_path / f"file{i}.yaml"
        path.write_text(text)
        files.append(path)
    result: dict[str, Any] = json.loads(run_oracle(oracle, files).stdout)
    assert result["upstream"] == "v1.37.2"
    return result


def pods_by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in result["pods"]}


def test_a_pod_that_fits_is_bound(oracle: Path, tmp_path: Path) -> None:
    result = decide(oracle, tmp_path, CLASSES + node("node-a", "4") + pod("small", "1", "low"))
    assert result["binds"] == [{"namespace": "default", "name": "small", "node": "node-a", "time": 0}]
    assert pods_by_name(result)["small"] == {
        "namespace": "default",
        "name": "small",
        "nodeName": "node-a",
        "nominatedNodeName": "",
        "preempted": False,
        "deleted": False,
    }
    assert result["nominations"] == [] and result["preempted"] == []


def test_documentation_example_preempts_the_two_lowest_priority_pods_of_one_node(oracle: Path) -> None:
    """Two full 4-CPU nodes (3 web pods of priority 1000, 5 batch pods of 100); a 2-CPU pod of priority
    1000000 arrives. On either node the fewest, lowest-priority victims are two batch pods; the preemptor
    is nominated to that node, waits out their 30 s grace period and binds there."""
    files = [EXAMPLE / "cluster.yaml", EXAMPLE / "workload.yaml", EXAMPLE / "preemptor.yaml"]
    result = json.loads(run_oracle(oracle, files).stdout)
    pods = pods_by_name(result)

    first_binds = result["binds"][:8]
    assert sorted(b["name"] for b in first_binds) == sorted(n for n in pods if n != "xyz-0")
    # Priority order: the three web pods (mid) are bound before any batch pod (low), all at time 0.
    assert {b["name"] for b in first_binds[:3]} == {"web-0", "web-1", "web-2"}
    assert all(b["time"] == 0 for b in first_binds)

    assert len(result["nominations"]) == 1
    nomination = result["nominations"][0]
    assert (nomination["name"], nomination["time"]) == ("xyz-0", 0)
    target = nomination["node"]

    victims = result["preempted"]
    assert len(victims) == 2
    for victim in victims:
        assert victim["name"].startswith("batch-")
        assert victim["node"] == target
        assert victim["by"] == "default/xyz-0"
        assert victim["time"] == 0
        assert pods[victim["name"]]["preempted"] and pods[victim["name"]]["deleted"]

    assert result["binds"][8:] == [{"namespace": "default", "name": "xyz-0", "node": target, "time": 30}]
    # The apiserver clears nominatedNodeName on binding (ClearingNominatedNodeNameAfterBinding).
    assert pods["xyz-0"]["nodeName"] == target and pods["xyz-0"]["nominatedNodeName"] == ""
    survivors = [p for p in pods.values() if p["name"] not in {v["name"] for v in victims}]
    assert all(not p["preempted"] and not p["deleted"] and p["nodeName"] for p in survivors)


def test_preemption_avoids_the_node_whose_victims_a_budget_protects(oracle: Path, tmp_path: Path) -> None:
    """Both nodes are full of equal low-priority pods; the pods on node-a are covered by a budget that
    allows no disruption, so upstream picks node-b (fewest PDB violations is its first criterion)."""
    running = (
        pod("guarded-0", "1", "low", "node-a", "{app: guarded}")
        + pod("guarded-1", "1", "low", "node-a", "{app: guarded}")
        + pod("free-0", "1", "low", "node-b", "{app: free}")
        + pod("free-1", "1", "low", "node-b", "{app: free}")
    )
    budget = """
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guarded}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: guarded}}
"""
    result = decide(
        oracle, tmp_path, CLASSES + node("node-a") + node("node-b") + running + budget, pod("urgent", "2", "high")
    )
    assert result["binds"] == [{"namespace": "default", "name": "urgent", "node": "node-b", "time": 30}]
    assert result["nominations"] == [{"namespace": "default", "name": "urgent", "node": "node-b", "time": 0}]
    assert sorted((v["name"], v["node"], v["by"]) for v in result["preempted"]) == [
        ("free-0", "node-b", "default/urgent"),
        ("free-1", "node-b", "default/urgent"),
    ]
    pods = pods_by_name(result)
    assert not pods["guarded-0"]["preempted"] and not pods["guarded-1"]["preempted"]


def test_a_pod_with_preemption_policy_never_waits_without_preempting(oracle: Path, tmp_path: Path) -> None:
    full = CLASSES + node("node-a") + pod("old-0", "1", "low", "node-a") + pod("old-1", "1", "low", "node-a")
    result = decide(oracle, tmp_path, full, pod("polite", "2", "high-never"))
    assert result["binds"] == [] and result["nominations"] == [] and result["preempted"] == []
    pods = pods_by_name(result)
    assert pods["polite"]["nodeName"] == "" and pods["polite"]["nominatedNodeName"] == ""
    assert all(not p["preempted"] and not p["deleted"] for p in pods.values())


def test_bad_manifest_exits_2_naming_the_file_object_and_field(oracle: Path, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(node("node-a") + pod("orphan", "1", "no-such-class"))
    proc = run_oracle(oracle, [path], expect_code=2)
    assert proc.stdout == ""
    assert str(path) in proc.stderr
    assert '"default/orphan"' in proc.stderr
    assert "spec.priorityClassName" in proc.stderr and "no-such-class" in proc.stderr

    typo = tmp_path / "typo.yaml"
    typo.write_text(node("node-a").replace("capacity:", "capacty:"))
    proc = run_oracle(oracle, [typo], expect_code=2)
    assert str(typo) in proc.stderr and '"node-a"' in proc.stderr and "capacty" in proc.stderr


def test_batch_mode_runs_each_line_on_a_fresh_cluster(oracle: Path) -> None:
    fits = CLASSES + node("node-a") + pod("p", "1", "low")
    lines = [
        {"id": "one", "files": [fits]},
        {"id": "bad", "files": [pod("q", "1", "missing")]},
        # Same names as "one": it would clash if the cluster were not fresh.
        {"id": "two", "files": [fits, pod("r", "1", "low")]},
    ]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    proc = subprocess.run(
        [str(oracle), "-batch"], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [o["id"] for o in out] == ["one", "bad", "two"]
    assert [b["name"] for b in out[0]["binds"]] == ["p"]
    assert out[1]["badInput"] is True and "missing" in out[1]["error"]
    assert [b["name"] for b in out[2]["binds"]] == ["p", "r"]


def test_python_helpers_give_the_cli_answer_and_repeat_it(oracle: Path, tmp_path: Path) -> None:
    """run_oracle and OracleBatch (one process, a fresh cluster per call) answer as the CLI does, and with
    one seed the same cluster gets the same answer: attempts run one at a time and score ties are seeded.
    (Only equally good preemption candidates are left to Go's map order, so this cluster has none.)"""
    pending = "".join(pod(f"small-{i}", "1", "low") for i in range(5))
    texts = [
        CLASSES + node("node-a", "4") + node("node-b", "4") + node("node-c", "4"),
        pending,
        pod("big", "4", "high"),
    ]
    paths = []
    for i, text in enumerate(texts):
        path = tmp_path / f"step{i}.yaml"
        path.write_text(text)
        paths.append(path)
    from_files = run_files(paths, binary=oracle)
    with OracleBatch(binary=oracle) as batch:
        answers = [batch.run(texts) for _ in range(3)]
        with pytest.raises(OracleInputError, match="no-such-class"):
            batch.run([pod("lost", "1", "no-such-class")])
        answers.append(batch.run(texts))
    for answer in answers:
        answer.pop("id")
        assert answer == from_files
    # The five small pods spread over the three nodes (2, 2, 1); the 4-CPU pod takes the node whose
    # victims are fewest: the one with a single small pod.
    placed = {b["name"]: b["node"] for b in from_files["binds"] if b["name"].startswith("small-")}
    counts = {n: list(placed.values()).count(n) for n in ("node-a", "node-b", "node-c")}
    assert sorted(counts.values()) == [1, 2, 2]
    lonely = next(n for n, c in counts.items() if c == 1)
    assert [(v["node"], v["by"]) for v in from_files["preempted"]] == [(lonely, "default/big")]
    assert from_files["binds"][-1] == {"namespace": "default", "name": "big", "node": lonely, "time": 30}


def test_seeds_show_the_choices_upstream_makes_among_equally_scored_nodes(oracle: Path, tmp_path: Path) -> None:
    """Three identical empty nodes score the same for a pod. Upstream takes whichever its Filter goroutines
    listed first; the oracle lists them in file order for seed 1 and in a seeded shuffle otherwise."""
    path = tmp_path / "tie.yaml"
    path.write_text(CLASSES + node("node-a", "4") + node("node-b", "4") + node("node-c", "4") + pod("p", "1", "low"))

    def chosen(seed: int) -> str:
        binds = run_files([path], seed=seed, binary=oracle)["binds"]
        assert len(binds) == 1
        return str(binds[0]["node"])

    assert {chosen(1) for _ in range(3)} == {"node-a"}
    assert {chosen(seed) for seed in range(2, 26)} == {"node-a", "node-b", "node-c"}

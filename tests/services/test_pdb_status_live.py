"""PodDisruptionBudget status in the running system: the binder keeps it as the disruption controller
does, every replica (the queue answering Get, the preemption service and its workers) sees it, and
live preemption weighs PDBs exactly as `podsched simulate` does on the same files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from live_api import Api, nominated
from manifest_dicts import COMMON, node, pdb, pod
from podsched_cli.main import main
from podsched_devstack.services import ServiceStack
from podsched_proto.api.v1 import api_pb2

# Three 4-CPU nodes full of low-priority pods: n1 holds two "web" pods, n2 two "db" pods, n3 two web
# pods and a db pod (one CPU free). web-pdb (minAvailable 2 of 4) allows two disruptions, db-pdb
# (minAvailable 2 of 3) one. A 4-CPU high-priority preemptor has a candidate on every node:
#   n1: web-0, web-1        -> no PDB violated
#   n2: db-0, db-1          -> one violation (db-pdb allows one)
#   n3: web-2, web-3, db-2  -> no violation, but more victims (a larger priority sum) than n1
# so n1 wins on the fewest violations and then the lowest priority sum. Read with a status of zeros
# (every covered pod a violation) n1 and n2 would tie at two, and n2 would win on its victims'
# later start time: the PDB status decides the node.
WEB, DB = {"app": "web"}, {"app": "db"}
EARLY, LATE = "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"


def running(name: str, cpu: str, node_name: str, labels: dict[str, str], started: str) -> dict[str, Any]:
    return pod(
        name, "low-priority", cpu, node_name=node_name, labels=labels, status={"phase": "Running", "startTime": started}
    )


def cluster_file() -> list[dict[str, Any]]:
    """One file, as a user writes it: classes, nodes, running pods, then the budgets."""
    return [
        *yaml.safe_load_all(COMMON.read_text()),
        node("n1"),
        node("n2"),
        node("n3"),
        running("web-0", "2", "n1", WEB, EARLY),
        running("web-1", "2", "n1", WEB, EARLY),
        running("db-0", "2", "n2", DB, LATE),
        running("db-1", "2", "n2", DB, LATE),
        running("web-2", "1", "n3", WEB, EARLY),
        running("web-3", "1", "n3", WEB, EARLY),
        running("db-2", "1", "n3", DB, EARLY),
        pdb("web-pdb", 2, app="web"),
        pdb("db-pdb", 2, app="db"),
    ]


# More matching pods: web-4 fills n3's free CPU and runs; db-3 finds no room (and may not preempt
# pods of its own priority), so it is expected but not healthy.
MORE_PODS = [pod("web-4", "low-priority", "1", labels=WEB), pod("db-3", "low-priority", "1", labels=DB)]
PREEMPTOR = [pod("preemptor", "high-priority", "4", labels={"app": "preemptor"})]


def write(path: Path, documents: list[dict[str, Any]]) -> str:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return str(path)


def cli(stack: ServiceStack, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    code = main(["--server", stack.server, *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def budgets(api: Api) -> dict[str, dict[str, Any]]:
    reply = api.stub.Get(api_pb2.GetRequest(resource="poddisruptionbudgets"), timeout=30)
    return {b["metadata"]["name"]: b for b in map(json.loads, reply.objects_json)}


def status_of(budget: dict[str, Any]) -> tuple[int, int, int, int]:
    """(expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed) as the API shows it."""
    status = budget["status"]
    return status["expectedPods"], status["currentHealthy"], status["desiredHealthy"], status["disruptionsAllowed"]


def wait_for_status(api: Api, want: dict[str, tuple[int, int, int, int]], what: str) -> dict[str, dict[str, Any]]:
    return api.wait(
        lambda: (found := budgets(api)) and {name: status_of(found[name]) for name in want} == want and found,
        what=f"{what}: PDB status {want} (last seen { ({n: status_of(b) for n, b in budgets(api).items()}) })",
    )


def described_status(text: str) -> dict[str, str]:
    """The Status section of `describe pdb`: label -> value."""
    section = text.split("Status:", 1)[1].split("Events:", 1)[0]
    return {
        label.strip(): value.strip() for label, value in (line.split(":", 1) for line in section.strip().splitlines())
    }


def simulate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *files: str) -> dict[str, Any]:
    args = ["simulate"]
    for path in files:
        args += ["-f", path]
    capsys.readouterr()
    assert main([*args, "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def disruption_targets(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in pods
        if any(
            c["type"] == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
            for c in p["status"].get("conditions", [])
        )
    )


def test_pdb_status_is_kept_current_and_live_preemption_weighs_it_as_simulate_does(
    stack: ServiceStack, api: Api, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cluster = write(tmp_path / "cluster.yaml", cluster_file())
    more = write(tmp_path / "more.yaml", MORE_PODS)
    preemptor = write(tmp_path / "preemptor.yaml", PREEMPTOR)

    # 1. One file: the budgets come after their pods, in the same write batch.
    cli(stack, capsys, "apply", "-f", cluster)
    found = wait_for_status(api, {"web-pdb": (4, 4, 2, 2), "db-pdb": (3, 3, 2, 1)}, "the cluster file applied")
    for budget in found.values():
        assert budget["metadata"]["generation"] == 1 and budget["status"]["observedGeneration"] == 1
    table = cli(stack, capsys, "get", "pdb").splitlines()
    assert table[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert [row.split()[:4] for row in table[1:]] == [["db-pdb", "2", "N/A", "1"], ["web-pdb", "2", "N/A", "2"]]
    shown = yaml.safe_load(cli(stack, capsys, "get", "pdb", "web-pdb", "-o", "yaml"))
    assert shown["status"] == {
        "observedGeneration": 1,
        "currentHealthy": 4,
        "desiredHealthy": 2,
        "disruptionsAllowed": 2,
        "expectedPods": 4,
    }
    described = cli(stack, capsys, "describe", "pdb", "db-pdb")
    assert described_status(described) == {"Allowed disruptions": "1", "Current": "3", "Desired": "2", "Total": "3"}

    # 2. More matching pods: the status follows their creation, binding and start.
    cli(stack, capsys, "apply", "-f", more)
    api.wait(lambda: api.pods()["web-4"]["spec"].get("nodeName") == "n3", what="web-4 bound to n3")
    wait_for_status(api, {"web-pdb": (5, 5, 2, 3), "db-pdb": (4, 3, 2, 1)}, "web-4 running, db-3 pending")

    # 3. A preemption the budgets decide: live and `simulate` on the same files pick the same victims
    # and node.
    cli(stack, capsys, "apply", "-f", preemptor)
    api.wait(lambda: nominated(api.pods()["preemptor"]), what="the preemptor nominated")
    live_pods = api.pods()
    simulated = simulate(tmp_path, capsys, cluster, more, preemptor)
    simulated_pods = {p["metadata"]["name"]: p for p in simulated["pods"]}
    simulated_victims = disruption_targets(simulated["pods"])
    assert nominated(live_pods["preemptor"]) == simulated_pods["preemptor"]["spec"]["nodeName"] == "n1"
    assert disruption_targets(list(live_pods.values())) == simulated_victims == ["web-0", "web-1"]
    # The victims terminate (30 s grace): no longer healthy, so web-pdb allows one disruption less.
    wait_for_status(api, {"web-pdb": (5, 3, 2, 1), "db-pdb": (4, 3, 2, 1)}, "the victims terminating")

    # 4. The budget's own changes: a new spec bumps the generation, a relabelled pod leaves the budget.
    changed = pdb("db-pdb", 1, app="db")
    api.apply_text(yaml.safe_dump(changed))
    found = wait_for_status(api, {"db-pdb": (4, 3, 1, 2)}, "db-pdb's minAvailable lowered")
    assert found["db-pdb"]["metadata"]["generation"] == 2 and found["db-pdb"]["status"]["observedGeneration"] == 2
    relabelled = running("db-2", "1", "n3", {"app": "db-retired"}, EARLY)
    api.apply_text(yaml.safe_dump(relabelled))
    wait_for_status(api, {"db-pdb": (3, 2, 1, 1)}, "db-2 relabelled out of db-pdb")

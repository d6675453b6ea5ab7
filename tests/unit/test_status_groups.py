"""A diagnosis on the wire (`status_groups`) and back (`node_to_status`): one group per distinct
status, each group's nodes in visiting order, whether the nodes share one Status object (the
vectorized cycle interns them) or each holds its own."""

from __future__ import annotations

from builders import make_node
from podsched.framework.interface import NodeToStatus
from podsched.framework.node_info import NodeInfo
from podsched.framework.status import Code, Status
from podsched_proto.filter.v1 import filter_pb2
from podsched_service.codec import node_to_status, status_groups


def wire(diagnosis: NodeToStatus) -> list[tuple[int, list[str], str, list[str]]]:
    return [(g.code, list(g.reasons), g.plugin, list(g.node_names)) for g in status_groups(diagnosis)]


def test_nodes_sharing_a_status_object_form_one_group_in_visiting_order() -> None:
    cpu = Status(Code.UNSCHEDULABLE, ["Insufficient cpu"], "NodeResourcesFit")
    taint = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) had untolerated taint"], "TaintToleration")
    diagnosis = NodeToStatus()
    for index, status in enumerate([cpu, taint, cpu, cpu, taint]):
        diagnosis.statuses[f"n{index}"] = status
    assert wire(diagnosis) == [
        (int(Code.UNSCHEDULABLE), ["Insufficient cpu"], "NodeResourcesFit", ["n0", "n2", "n3"]),
        (int(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), ["node(s) had untolerated taint"], "TaintToleration", ["n1", "n4"]),
    ]


def test_equal_statuses_in_separate_objects_keep_the_visiting_order() -> None:
    diagnosis = NodeToStatus()
    for index, reason in enumerate(["Insufficient cpu", "Insufficient memory", "Insufficient cpu"]):
        diagnosis.statuses[f"n{index}"] = Status(Code.UNSCHEDULABLE, [reason], "NodeResourcesFit")
    assert [names for *_, names in wire(diagnosis)] == [["n0", "n2"], ["n1"]]
    many = NodeToStatus()  # a status object per node
    for index in range(200):
        many.statuses[f"n{index}"] = Status(Code.UNSCHEDULABLE, [f"reason {index % 3}"], "P")
    assert [names[:2] for *_, names in wire(many)] == [["n0", "n3"], ["n1", "n4"], ["n2", "n5"]]


def test_the_groups_decode_to_the_same_statuses() -> None:
    shared = Status(Code.UNSCHEDULABLE, ["Insufficient cpu"], "NodeResourcesFit")
    diagnosis = NodeToStatus()
    for index in range(100):
        diagnosis.statuses[f"n{index}"] = shared if index % 4 else Status(Code.UNSCHEDULABLE, ["other"], "X")
    back = node_to_status(status_groups(diagnosis), filter_pb2.NodeStatusGroup())
    assert {name: (s.code, s.reasons, s.plugin) for name, s in back.statuses.items()} == {
        name: (s.code, s.reasons, s.plugin) for name, s in diagnosis.statuses.items()
    }


def test_the_groups_answer_postfilter_as_the_map_does() -> None:
    """The nodes with each code (snapshot order) and the FitError histogram, read from the groups,
    are the map's, whatever the absent status; so is each node's status, once a reader asks."""
    cpu = Status(Code.UNSCHEDULABLE, ["Insufficient cpu"], "NodeResourcesFit")
    taint = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["node(s) had untolerated taint"], "TaintToleration")
    diagnosis = NodeToStatus()
    for index in range(0, 40, 3):  # every third node left out: those have the absent status
        diagnosis.statuses[f"n{index}"] = taint if index % 2 else cpu
    nodes = [NodeInfo(make_node(f"n{index}").obj()) for index in range(40)]
    for absent in (None, Status(Code.UNSCHEDULABLE, ["narrowed"]), Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["x"])):
        diagnosis.absent = absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
        absent_group = (
            filter_pb2.NodeStatusGroup(code=int(absent.code), reasons=absent.reasons, plugin=absent.plugin)
            if absent
            else filter_pb2.NodeStatusGroup()
        )
        back = node_to_status(status_groups(diagnosis), absent_group)
        for code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE):
            expected = [node.name for node in diagnosis.nodes_with_code(code, nodes)]
            assert [node.name for node in back.nodes_with_code(code, nodes)] == expected
        assert back.reason_counts(45) == diagnosis.reason_counts(45)
        assert {name: status.reasons for name, status in back.statuses.items()} == {
            name: status.reasons for name, status in diagnosis.statuses.items()
        }
        assert [node.name for node in back.nodes_with_code(Code.UNSCHEDULABLE, nodes)] == [
            node.name for node in diagnosis.nodes_with_code(Code.UNSCHEDULABLE, nodes)
        ]

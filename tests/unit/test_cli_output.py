"""The `podsched` client's words: argument parsing, resource names, and every line it prints
(tables, describe, events, apply and delete lines, errors), as pure functions of their inputs.

No server here: the end-to-end CLI tests run against the real services."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from builders import HIGH_PRIORITY, LOW_PRIORITY, make_node, make_pdb, make_pod, make_priority_class
from podsched.api.manifests import encode_object, format_timestamp
from podsched.cluster.events import Event, ObjectReference
from podsched_cli import output
from podsched_cli.errors import UsageError
from podsched_cli.main import build_parser, delete_grace_period, main, read_inputs, resolve_server
from podsched_cli.resources import (
    NODE,
    PDB,
    POD,
    PRIORITY_CLASS,
    UnknownResourceError,
    client_side_error,
    parse_targets,
    resource_type,
)
from podsched_proto.api.v1 import api_pb2
from podsched_proto.events.v1 import events_pb2

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
MINUTE = 60.0
HOUR = 3600.0


def stamp(seconds_ago: float) -> str:
    return format_timestamp(NOW - seconds_ago)


def created(obj: dict[str, Any], seconds_ago: float) -> dict[str, Any]:
    obj["metadata"]["creationTimestamp"] = stamp(seconds_ago)
    return obj


def event(
    reason: str,
    message: str,
    name: str = "web",
    *,
    kind: str = "Pod",
    namespace: str = "default",
    seconds_ago: float = 5.0,
    type_: str = "Normal",
    controller: str = "default-scheduler",
    related: ObjectReference | None = None,
    count: int = 1,
    last_seconds_ago: float = 0.0,
) -> dict[str, Any]:
    return Event(
        type=type_,
        reason=reason,
        message=message,
        involved_object=ObjectReference(kind, namespace, name, f"uid-{name}"),
        event_time=NOW - seconds_ago,
        reporting_controller=controller,
        related=related,
        count=count,
        last_time=NOW - last_seconds_ago,
    ).to_dict(format_timestamp)


# --- resources and arguments --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("po", POD),
        ("pod", POD),
        ("pods", POD),
        ("Pods", POD),
        ("no", NODE),
        ("node", NODE),
        ("nodes", NODE),
        ("pc", PRIORITY_CLASS),
        ("priorityclass", PRIORITY_CLASS),
        ("priorityclasses", PRIORITY_CLASS),
        ("priorityclasses.scheduling.k8s.io", PRIORITY_CLASS),
        ("pdb", PDB),
        ("poddisruptionbudget", PDB),
        ("poddisruptionbudgets", PDB),
        ("poddisruptionbudgets.policy", PDB),
    ],
)
def test_short_singular_and_plural_names_map_to_the_canonical_plural(word: str, expected: Any) -> None:
    assert resource_type(word) is expected


def test_an_unknown_resource_is_refused_with_kubectls_words() -> None:
    with pytest.raises(UnknownResourceError, match='the server doesn\'t have a resource type "foo"'):
        resource_type("foo")


def test_kind_and_names_or_kind_slash_name_become_targets() -> None:
    assert parse_targets(["po"]) == [(POD, None)]
    assert parse_targets(["po", "a", "b"]) == [(POD, "a"), (POD, "b")]
    assert parse_targets(["pod/a", "node/n1"]) == [(POD, "a"), (NODE, "n1")]


@pytest.mark.parametrize("words", [[], ["po", "pod/a"], ["pod/"]])
def test_malformed_resource_arguments_are_usage_errors(words: list[str]) -> None:
    with pytest.raises(UsageError):
        parse_targets(words)


def test_global_options_are_accepted_before_and_after_the_command() -> None:
    before = build_parser().parse_args(["--server", "h:1", "--timeout", "5", "get", "po"])
    after = build_parser().parse_args(["get", "po", "--server", "h:2", "--timeout", "7"])
    neither = build_parser().parse_args(["get", "po"])
    assert (before.server, before.timeout) == ("h:1", 5.0)
    assert (after.server, after.timeout) == ("h:2", 7.0)
    assert (neither.server, neither.timeout) == (None, 30.0)


def test_the_server_comes_from_the_flag_then_the_environment_then_the_local_default() -> None:
    assert resolve_server("h:1", {"PODSCHED_SERVER": "h:2"}) == "h:1"
    assert resolve_server(None, {"PODSCHED_SERVER": "h:2"}) == "h:2"
    assert resolve_server(None, {}) == "127.0.0.1:50051"


def test_each_command_parses_its_kubectl_flags() -> None:
    apply = build_parser().parse_args(["apply", "-f", "a.yaml", "-f", "-", "--dry-run=server"])
    assert (apply.filename, apply.dry_run) == (["a.yaml", "-"], "server")
    assert build_parser().parse_args(["apply", "-f", "a.yaml"]).dry_run == "none"
    get = build_parser().parse_args(["get", "pods", "web", "-n", "team", "-o", "wide"])
    assert (get.resources, get.namespace, get.output, get.all_namespaces) == (["pods", "web"], "team", "wide", False)
    assert build_parser().parse_args(["get", "po", "-A"]).all_namespaces
    delete = build_parser().parse_args(["delete", "pod", "web", "--grace-period", "5"])
    assert (delete.resources, delete.grace_period, delete.filename, delete.force) == (["pod", "web"], 5, [], False)
    assert build_parser().parse_args(["delete", "-f", "x.yaml"]).grace_period == -1
    describe = build_parser().parse_args(["describe", "node", "n1"])
    assert describe.resources == ["node", "n1"]
    events = build_parser().parse_args(["events", "-A", "--watch", "-o", "json"])
    assert (events.all_namespaces, events.watch, events.output) == (True, True, "json")


@pytest.mark.parametrize("argv", [["get", "po", "-o", "table"], ["apply", "-f", "x", "--dry-run=bogus"], ["get"]])
def test_arguments_outside_the_contract_are_refused_by_the_parser(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)


@pytest.mark.parametrize(
    ("grace", "force", "sent"),
    [(-1, False, None), (5, False, 5), (0, False, 1), (-1, True, 0), (3, True, 3)],
)
def test_grace_period_follows_kubectl(grace: int, force: bool, sent: int | None) -> None:
    assert delete_grace_period(grace, force) == sent


def test_files_are_read_before_sending_and_stdin_once(tmp_path: Any) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("kind: Node\n", encoding="utf-8")
    reads = []

    def stdin() -> str:
        reads.append(1)
        return "from stdin"

    assert read_inputs([str(path), "-", "-"], stdin) == [(str(path), "kind: Node\n"), ("STDIN", "from stdin")]
    assert reads == [1]
    with pytest.raises(UsageError, match=r'the path ".*missing.yaml" does not exist'):
        read_inputs([str(tmp_path / "missing.yaml")], stdin)


def test_a_directory_stands_for_its_manifest_files_in_name_order(tmp_path: Any) -> None:
    for name in ("b.yaml", "a.json", "notes.txt", "c.yml"):
        (tmp_path / name).write_text(name, encoding="utf-8")
    assert read_inputs([str(tmp_path)], lambda: "") == [
        (str(tmp_path / name), name) for name in ("a.json", "b.yaml", "c.yml")
    ]


# --- client-side checks and the commands that fail before any request ---------------------------------


def test_an_unknown_kind_is_reported_as_kubectl_resource_mapping_error() -> None:
    document = {"apiVersion": "v1", "kind": "Foo", "metadata": {"name": "x"}}
    assert client_side_error(document, "f.yaml") == (
        'error: resource mapping not found for name: "x" namespace: "" from "f.yaml": '
        'no matches for kind "Foo" in version "v1"\nensure CRDs are installed first'
    )


def test_an_unserved_version_of_a_known_kind_is_a_mapping_error_too() -> None:
    document = {"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"}}
    assert client_side_error(document, "f.yaml") == (
        'error: resource mapping not found for name: "p" namespace: "team" from "f.yaml": '
        'no matches for kind "Pod" in version "v2"\nensure CRDs are installed first'
    )


def test_the_namespace_flag_fills_in_or_must_match_the_objects_namespace() -> None:
    blank = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert client_side_error(blank, "f.yaml", "team") is None
    assert blank["metadata"]["namespace"] == "team"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    assert client_side_error(node, "f.yaml", "team") is None
    assert "namespace" not in node["metadata"]
    other = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "prod"}}
    assert client_side_error(other, "f.yaml", "team") == (
        'error: the namespace from the provided object "prod" does not match the namespace "team". '
        "You must pass '--namespace=prod' to perform this operation."
    )


UNREACHABLE = ["--server", "127.0.0.1:1", "--timeout", "2"]


def test_apply_of_malformed_yaml_prints_one_error_line_and_fails(tmp_path: Any, capsys: Any) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: Pod\n  metadata: [\n", encoding="utf-8")
    assert main([*UNREACHABLE, "apply", "-f", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"error: error parsing {path}: error converting YAML to JSON: yaml: line ")
    assert len(captured.err.splitlines()) == 1


def test_apply_of_an_unknown_kind_fails_on_the_client(tmp_path: Any, capsys: Any) -> None:
    path = tmp_path / "f.yaml"
    path.write_text("apiVersion: v1\nkind: Foo\nmetadata:\n  name: x\n", encoding="utf-8")
    assert main([*UNREACHABLE, "apply", "-f", str(path)]) == 1
    assert capsys.readouterr().err == (
        f'error: resource mapping not found for name: "x" namespace: "" from "{path}": '
        'no matches for kind "Foo" in version "v1"\nensure CRDs are installed first\n'
    )


def test_apply_of_a_missing_path_fails_before_sending(capsys: Any) -> None:
    assert main([*UNREACHABLE, "apply", "-f", "/nonexistent/x.yaml"]) == 1
    assert capsys.readouterr().err == 'error: the path "/nonexistent/x.yaml" does not exist\n'


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["get", "foo"], 'error: the server doesn\'t have a resource type "foo"\n'),
        (["get", "po", "web", "-A"], "error: a resource cannot be retrieved by name across all namespaces\n"),
        (["delete"], "error: You must provide one or more resources by argument or filename.\n"),
        (["delete", "pod"], "error: resource(s) were provided, but no name was specified\n"),
        (
            ["delete", "pod", "web", "-f", "x.yaml"],
            "error: when paths, URLs, or stdin is provided as input, you may not specify resource arguments as well\n",
        ),
    ],
)
def test_usage_errors_print_one_kubectl_line_and_exit_1(argv: list[str], message: str, capsys: Any) -> None:
    assert main([*UNREACHABLE, *argv]) == 1
    assert capsys.readouterr().err == message


def test_a_refused_connection_names_the_server(capsys: Any) -> None:
    assert main([*UNREACHABLE, "get", "pods"]) == 1
    assert capsys.readouterr().err == (
        "The connection to the server 127.0.0.1:1 was refused - is podsched running? (make up)\n"
    )


# --- tabwriter and ages -------------------------------------------------------------------------------


def test_tabwriter_aligns_columns_over_consecutive_lines_only() -> None:
    lines = ["Name:\tweb", "Priority Class Name:\thigh", "Containers:", "  c0:\tx", "  longer-name:\ty"]
    assert output.tabwrite(lines, 0, 2) == [
        "Name:                 web",
        "Priority Class Name:  high",
        "Containers:",
        "  c0:           x",
        "  longer-name:  y",
    ]


def test_get_tables_pad_with_three_blanks_and_a_minimum_width_of_six() -> None:
    assert output.table(["NAME", "AGE"], [["a", "1s"]]) == ["NAME   AGE", "a      1s"]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (12 * MINUTE, "12m"),
        (179 * MINUTE, "179m"),
        (3 * HOUR, "3h"),
        (3 * HOUR + 10 * MINUTE, "3h10m"),
        (20 * HOUR, "20h"),
        (3 * 24 * HOUR + 4 * HOUR, "3d4h"),
        (4 * 24 * HOUR, "4d"),
        (30 * 24 * HOUR, "30d"),
        (2 * 365 * 24 * HOUR + 3 * 24 * HOUR, "2y3d"),
        (9 * 365 * 24 * HOUR, "9y"),
    ],
)
def test_ages_read_like_kubectls(seconds: float, text: str) -> None:
    assert output.human_duration(seconds) == text


def test_an_object_without_creation_time_has_an_unknown_age() -> None:
    assert output.age(None, NOW) == "<unknown>"
    assert output.age(stamp(3 * MINUTE), NOW) == "3m"


# --- get ----------------------------------------------------------------------------------------------


def running_pod() -> dict[str, Any]:
    pod = make_pod("web").priority(HIGH_PRIORITY).req(cpu="500m", memory="1Gi").node("n1").start_time(NOW - 60)
    return created(encode_object(pod.obj()), 5)


def pending_pod() -> dict[str, Any]:
    return created(encode_object(make_pod("batch", "team").priority(LOW_PRIORITY).nominated("n2").obj()), 3 * MINUTE)


def terminating_pod() -> dict[str, Any]:
    pod = make_pod("victim").priority(LOW_PRIORITY).req(cpu="1").node("n1").terminating(NOW - 2).grace(30)
    return created(encode_object(pod.obj()), 5 * HOUR)


def test_pods_table_shows_ready_status_restarts_and_age() -> None:
    text = output.format_table(POD, [running_pod(), pending_pod(), terminating_pod()], NOW)
    assert text == (
        "NAME     READY   STATUS        RESTARTS   AGE\n"
        "web      1/1     Running       0          5s\n"
        "batch    0/1     Pending       0          3m\n"
        "victim   1/1     Terminating   0          5h\n"
    )


def test_wide_pods_table_adds_node_nomination_and_priority_and_all_namespaces_a_namespace() -> None:
    text = output.format_table(POD, [running_pod(), pending_pod()], NOW, wide=True, all_namespaces=True)
    assert text == (
        "NAMESPACE   NAME    READY   STATUS    RESTARTS   AGE   IP       NODE     NOMINATED NODE   "
        "READINESS GATES   PRIORITY\n"
        "default     web     1/1     Running   0          5s    <none>   n1       <none>           "
        "<none>            1000\n"
        "team        batch   0/1     Pending   0          3m    <none>   <none>   n2               "
        "<none>            0\n"
    )


def test_nodes_table_marks_cordoned_nodes_and_wide_shows_allocatable() -> None:
    nodes = [
        created(encode_object(make_node("n1").capacity(cpu="4", memory="8Gi", pods=110).obj()), 4 * 24 * HOUR),
        created(encode_object(make_node("n2").capacity(cpu="500m", memory="1Gi").unschedulable().obj()), 30),
    ]
    assert output.format_table(NODE, nodes, NOW, all_namespaces=True) == (
        "NAME   STATUS                     ROLES    AGE   VERSION\n"
        "n1     Ready                      <none>   4d    podsched\n"
        "n2     Ready,SchedulingDisabled   <none>   30s   podsched\n"
    )
    assert output.format_table(NODE, nodes[:1], NOW, wide=True) == (
        "NAME   STATUS   ROLES    AGE   VERSION    CPU   MEMORY   PODS\n"
        "n1     Ready    <none>   4d    podsched   4     8Gi      110\n"
    )


def test_priority_classes_table() -> None:
    classes = [
        created(encode_object(make_priority_class("high", 1000)), 10),
        created(encode_object(make_priority_class("low", 10, global_default=True, policy="Never")), 10),
    ]
    assert output.format_table(PRIORITY_CLASS, classes, NOW) == (
        "NAME   VALUE   GLOBAL-DEFAULT   AGE   PREEMPTIONPOLICY\n"
        "high   1000    false            10s   PreemptLowerPriority\n"
        "low    10      true             10s   Never\n"
    )


def test_pdb_table_shows_na_for_the_unset_bound() -> None:
    pdb = created(encode_object(make_pdb("web-pdb", allowed=1, app="web")), MINUTE * 7)
    assert output.format_table(PDB, [pdb], NOW) == (
        "NAME      MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE\n"
        "web-pdb   1               N/A               1                     7m\n"
    )


def test_an_empty_list_says_where_nothing_was_found() -> None:
    assert output.no_resources_message(POD, "", False) == "No resources found in default namespace."
    assert output.no_resources_message(PDB, "team", False) == "No resources found in team namespace."
    assert output.no_resources_message(POD, "", True) == "No resources found"
    assert output.no_resources_message(NODE, "team", False) == "No resources found"


def test_json_is_the_object_by_name_or_a_list_indented_by_four() -> None:
    pod = running_pod()
    assert output.format_objects([pod], "json", single=True) == json.dumps(pod, indent=4) + "\n"
    listed = json.loads(output.format_objects([pod], "json", single=False))
    assert listed == {"apiVersion": "v1", "kind": "List", "items": [pod], "metadata": {"resourceVersion": ""}}
    assert output.format_objects([], "json", single=False).startswith('{\n    "apiVersion": "v1",\n    "kind": "List"')


def test_yaml_is_the_same_document_in_yaml() -> None:
    pod = running_pod()
    assert yaml.safe_load(output.format_objects([pod], "yaml", single=True)) == pod
    assert yaml.safe_load(output.format_objects([pod, pod], "yaml", single=False))["items"] == [pod, pod]


def test_yaml_quotes_strings_that_look_like_other_types_as_kubectl_does() -> None:
    text = output.format_yaml({"cpu": "2", "resourceVersion": "31", "time": "2026-01-01T00:00:00Z", "name": "web"})
    assert text == 'cpu: "2"\nresourceVersion: "31"\ntime: "2026-01-01T00:00:00Z"\nname: web\n'


def test_name_output_uses_the_group_qualified_resource() -> None:
    objects = [running_pod(), encode_object(make_priority_class("high", 1)), encode_object(make_pdb("b"))]
    assert (
        output.format_names(objects) == "pod/web\npriorityclass.scheduling.k8s.io/high\npoddisruptionbudget.policy/b\n"
    )


# --- apply and delete ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name", "action", "line"),
    [
        ("Pod", "web", "created", "pod/web created"),
        ("Node", "n1", "configured", "node/n1 configured"),
        ("PriorityClass", "high", "unchanged", "priorityclass.scheduling.k8s.io/high unchanged"),
        ("PodDisruptionBudget", "pdb", "created", "poddisruptionbudget.policy/pdb created"),
    ],
)
def test_apply_lines_read_like_kubectls(kind: str, name: str, action: str, line: str) -> None:
    assert output.apply_line(kind, name, action) == line
    assert output.apply_line(kind, name, action, dry_run=True) == line + " (server dry run)"


def apply_response(obj: dict[str, Any], action: str = "created", **dry_run: Any) -> api_pb2.ApplyResponse:
    response = api_pb2.ApplyResponse(action=action, object_json=json.dumps(obj).encode())
    if dry_run:
        response.dry_run.CopyFrom(api_pb2.DryRunOutcome(**dry_run))
    return response


def test_apply_response_is_named_by_the_stored_object() -> None:
    stored = encode_object(make_priority_class("high", 1000))
    assert output.format_apply_response(apply_response(stored, "unchanged"), {}) == [
        "priorityclass.scheduling.k8s.io/high unchanged"
    ]
    sent = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    assert output.format_apply_response(api_pb2.ApplyResponse(action="configured"), sent) == ["node/n1 configured"]


def test_a_server_dry_run_of_a_pod_predicts_its_binding() -> None:
    response = apply_response(running_pod(), node_name="n1")
    assert output.format_apply_response(response, {}, dry_run=True) == [
        "pod/web created (server dry run)",
        "  would bind to node n1",
    ]


def test_a_server_dry_run_of_a_preemptor_names_node_and_victims_in_order() -> None:
    victims = [
        events_pb2.ObjectReference(kind="Pod", namespace="default", name="low-1", uid="u1"),
        events_pb2.ObjectReference(kind="Pod", namespace="default", name="low-2", uid="u2"),
    ]
    response = apply_response(running_pod(), nominated_node_name="n1", victims=victims, message="0/3 nodes...")
    assert output.format_apply_response(response, {}, dry_run=True) == [
        "pod/web created (server dry run)",
        "  would be nominated to node n1 after preempting default/low-1, default/low-2",
    ]


def test_a_server_dry_run_of_an_unschedulable_pod_says_why_it_would_wait() -> None:
    message = "0/3 nodes are available: 3 Insufficient cpu. preemption: not eligible"
    response = apply_response(pending_pod(), "configured", message=message)
    assert output.format_apply_response(response, {}, dry_run=True) == [
        "pod/batch configured (server dry run)",
        f"  would stay pending: {message}",
    ]


def test_a_server_dry_run_of_a_node_has_no_prediction() -> None:
    node = encode_object(make_node("n1").obj())
    assert output.format_apply_response(apply_response(node), {}, dry_run=True) == ["node/n1 created (server dry run)"]


def test_delete_lines_read_like_kubectls() -> None:
    assert output.delete_line(POD, "web") == 'pod "web" deleted'
    assert output.delete_line(PRIORITY_CLASS, "high") == 'priorityclass.scheduling.k8s.io "high" deleted'
    assert output.delete_line(POD, "web", force=True) == 'pod "web" force deleted'
    assert output.delete_line(POD, "web", dry_run=True) == 'pod "web" deleted (server dry run)'
    assert output.delete_line(POD, "web", force=True, dry_run=True) == 'pod "web" force deleted (server dry run)'


def test_delete_with_o_name_prints_kind_slash_name_dry_run_or_not() -> None:
    assert output.delete_line(POD, "web", output="name") == "pod/web"
    assert output.delete_line(POD, "web", force=True, dry_run=True, output="name") == "pod/web"
    assert output.delete_line(PRIORITY_CLASS, "high", output="name") == "priorityclass.scheduling.k8s.io/high"


# --- errors -------------------------------------------------------------------------------------------


def test_server_errors_print_the_servers_line_as_is() -> None:
    line = 'Error from server (Forbidden): pods "p" is forbidden: no PriorityClass with name foo was found'
    assert output.rpc_error_message("PERMISSION_DENIED", line, "h:1", 30) == line
    assert output.rpc_error_message("NOT_FOUND", 'Error from server (NotFound): pods "p" not found', "h:1", 30) == (
        'Error from server (NotFound): pods "p" not found'
    )


def test_an_unworded_server_error_gets_kubectls_prefix() -> None:
    assert output.rpc_error_message("INTERNAL", "boom", "h:1", 30) == "Error from server (InternalError): boom"
    assert output.rpc_error_message("ALREADY_EXISTS", "x", "h:1", 30) == "Error from server (AlreadyExists): x"


def test_an_unreachable_or_silent_server_is_named() -> None:
    assert output.rpc_error_message("UNAVAILABLE", "failed to connect", "127.0.0.1:50051", 30) == (
        "The connection to the server 127.0.0.1:50051 was refused - is podsched running? (make up)"
    )
    assert output.rpc_error_message("DEADLINE_EXCEEDED", "", "h:1", 2.5) == (
        "Unable to connect to the server h:1: no answer within 2.5s (--timeout)"
    )


# --- events -------------------------------------------------------------------------------------------


def proto_event(**overrides: Any) -> events_pb2.Event:
    message = events_pb2.Event(
        type="Warning",
        reason="Preempted",
        message="Preempted by pod uid-high on node n1",
        involved_object=events_pb2.ObjectReference(kind="Pod", namespace="default", name="low", uid="uid-low"),
        reporting_controller="default-scheduler",
        action="Preempting",
        related=events_pb2.ObjectReference(kind="Pod", namespace="default", name="high", uid="uid-high"),
        count=1,
        sequence=7,
    )
    message.event_time.FromSeconds(int(NOW))
    for key, value in overrides.items():
        setattr(message, key, value)
    return message


def test_event_protos_become_the_kubernetes_event_shape_simulate_prints() -> None:
    expected = Event(
        type="Warning",
        reason="Preempted",
        message="Preempted by pod uid-high on node n1",
        involved_object=ObjectReference("Pod", "default", "low", "uid-low"),
        event_time=NOW,
        reporting_controller="default-scheduler",
        action="Preempting",
        related=ObjectReference("Pod", "default", "high", "uid-high"),
    ).to_dict(format_timestamp)
    assert output.event_to_dict(proto_event()) == expected
    assert expected["involvedObject"] == {"kind": "Pod", "namespace": "default", "name": "low", "uid": "uid-low"}


def test_a_repeated_event_carries_its_last_time_and_fractional_times_survive() -> None:
    repeated = proto_event(count=3)
    repeated.ClearField("related")
    repeated.last_time.FromSeconds(int(NOW) + 90)
    repeated.event_time.nanos = 500_000_000
    converted = output.event_to_dict(repeated)
    assert converted["count"] == 3
    assert converted["lastTimestamp"] == format_timestamp(NOW + 90)
    assert converted["eventTime"] == "2026-01-01T00:00:00.500000Z"
    assert "related" not in converted


def test_events_table_shows_last_seen_and_the_object() -> None:
    events = [
        event("Scheduled", "Successfully assigned default/web to n1", seconds_ago=120),
        event("FailedScheduling", " 0/3 nodes are available. ", "batch", type_="Warning", count=4, seconds_ago=600),
    ]
    assert output.format_events(events, NOW) == (
        "LAST SEEN          TYPE      REASON             OBJECT      MESSAGE\n"
        "2m                 Normal    Scheduled          pod/web     Successfully assigned default/web to n1\n"
        "0s (x4 over 10m)   Warning   FailedScheduling   pod/batch   0/3 nodes are available.\n"
    )


def test_all_namespaces_events_put_node_events_in_the_default_namespace() -> None:
    events = [
        event("Killing", "Stopping container c0", "p", namespace="team"),
        event("X", "m", "n1", kind="Node", namespace=""),
    ]
    assert output.format_events(events, NOW, all_namespaces=True) == (
        "NAMESPACE   LAST SEEN   TYPE     REASON    OBJECT    MESSAGE\n"
        "team        5s          Normal   Killing   pod/p     Stopping container c0\n"
        "default     5s          Normal   X         node/n1   m\n"
    )


def test_no_events_message() -> None:
    assert output.no_events_message("", False) == "No events found in default namespace."
    assert output.no_events_message("team", False) == "No events found in team namespace."
    assert output.no_events_message("team", True) == "No events found."


def test_watched_events_print_one_json_object_per_line() -> None:
    line = output.format_event_json_line(event("Scheduled", "ok"))
    assert line.endswith("\n") and "\n" not in line[:-1]
    assert json.loads(line)["reason"] == "Scheduled"


def test_watch_shows_each_event_once_and_again_when_its_count_grows() -> None:
    seen = output.EventDeduplicator()
    assert seen.is_new(1, 1)
    assert not seen.is_new(1, 1)  # the list and the stream overlap
    assert seen.is_new(2, 1)
    assert seen.is_new(1, 2)  # bumped: shown again with the new count
    assert not seen.is_new(1, 2)
    assert not seen.is_new(1, 1)  # an older copy arriving late
    assert seen.is_new(0, 1) and seen.is_new(0, 1)  # unnumbered: nothing to compare


def test_watched_rows_keep_the_columns_of_the_table_printed_first() -> None:
    header = output.event_header()
    rows = [output.event_row(event("Scheduled", "ok", "web"), NOW)]
    widths = output.column_widths(header, rows)
    first = output.table(header, rows)
    later = output.padded_row(output.event_row(event("Killing", "bye", "db"), NOW), widths)
    assert first[1].index("pod/web") == later.index("pod/db")
    assert later == "5s          Normal   Killing     pod/db    bye"


# --- describe -----------------------------------------------------------------------------------------


def test_describe_pending_pod_explains_the_latest_failed_scheduling() -> None:
    pod = created(
        encode_object(
            make_pod("web")
            .priority(HIGH_PRIORITY)
            .priority_class("high")
            .req(cpu="2", memory="1Gi")
            .label("app", "web")
            .obj()
        ),
        60,
    )
    events = [
        event("FailedScheduling", "0/3 nodes are available: 3 Insufficient cpu.", type_="Warning", seconds_ago=50),
        event("FailedScheduling", "0/3 nodes are available: 3 Insufficient memory.", type_="Warning", seconds_ago=10),
    ]
    assert output.describe_pod(pod, events, NOW) == (
        "Name:                      web\n"
        "Namespace:                 default\n"
        "Priority:                  1000\n"
        "Priority Class Name:       high\n"
        "Preemption Policy:         PreemptLowerPriority\n"
        "Node:                      <none>\n"
        "Labels:                    app=web\n"
        "Status:                    Pending\n"
        "Termination Grace Period:  30s\n"
        "Containers:\n"
        "  c0:\n"
        "    Requests:\n"
        "      cpu:     2\n"
        "      memory:  1Gi\n"
        "Scheduling:\n"
        "  Pending: 0/3 nodes are available: 3 Insufficient memory.\n"
        "Events:\n"
        "  Type     Reason            Age   From               Message\n"
        "  ----     ------            ----  ----               -------\n"
        "  Warning  FailedScheduling  50s   default-scheduler  0/3 nodes are available: 3 Insufficient cpu.\n"
        "  Warning  FailedScheduling  10s   default-scheduler  0/3 nodes are available: 3 Insufficient memory.\n"
    )


def test_describe_pending_pod_names_the_pdbs_that_blocked_strict_preemption() -> None:
    pod = encode_object(make_pod("high").priority(HIGH_PRIORITY).req(cpu="2").obj())
    message = (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "1 Preemption would violate PodDisruptionBudget default/db (pdbPolicy: Strict), "
        "2 Preemption would violate PodDisruptionBudgets default/db, default/web (pdbPolicy: Strict).."
    )
    text = output.describe_pod(pod, [event("FailedScheduling", message, "high", type_="Warning")], NOW)
    assert (
        "Scheduling:\n"
        f"  Pending: {message}\n"
        "  Preemption blocked by PodDisruptionBudget: default/db (pdbPolicy: Strict)\n"
        "  Preemption blocked by PodDisruptionBudget: default/web (pdbPolicy: Strict)\n"
    ) in text


def test_describe_nominated_pod_says_it_waits_for_victims() -> None:
    pod = encode_object(make_pod("high").priority(HIGH_PRIORITY).nominated("n1").obj())
    text = output.describe_pod(pod, [event("FailedScheduling", "0/1 nodes are available.", "high")], NOW)
    assert "NominatedNodeName:         n1\n" in text
    assert "Scheduling:\n  Nominated to node n1 (waiting for victims to terminate)\n" in text


def test_describe_victim_names_its_preemptor_node_and_disruption_condition() -> None:
    pod = encode_object(make_pod("low").req(cpu="1").node("n1").start_time(NOW - 60).terminating(NOW - 4).obj())
    pod["metadata"]["deletionGracePeriodSeconds"] = 10
    preempted = event(
        "Preempted",
        "Preempted by pod uid-high on node n1",
        "low",
        related=ObjectReference("Pod", "default", "high", "uid-high"),
        seconds_ago=4,
    )
    text = output.describe_pod(pod, [preempted], NOW)
    assert "Start Time:                Wed, 31 Dec 2025 23:59:00 +0000\n" in text
    assert "Status:                    Terminating (lasts 4s)\n" in text
    assert "Termination Grace Period:  10s\n" in text
    assert "Conditions:\n  Type              Status  Reason                 Message\n" in text
    assert "  DisruptionTarget  True    PreemptionByScheduler\n" in text
    assert "Scheduling:\n  Preempted by pod default/high on node n1\n" in text


def test_describe_victim_without_related_falls_back_to_the_uid_in_the_message() -> None:
    pod = encode_object(make_pod("low").node("n1").obj())
    preempted = event("Preempted", "Preempted by pod uid-high on node n2", "low")
    assert output.scheduling_summary(pod, [preempted]) == "Preempted by pod uid-high on node n2"


def test_a_cleared_nomination_is_explained_until_the_next_attempt() -> None:
    pod = encode_object(make_pod("mid").obj())
    cleared = event(
        "NominationCleared", "Nomination to node n1 cleared: pod default/high preempted", "mid", seconds_ago=5
    )
    failed_before = event("FailedScheduling", "0/1 nodes are available.", "mid", seconds_ago=9)
    failed_after = event("FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.", "mid", seconds_ago=1)
    assert output.scheduling_summary(pod, [failed_before, cleared]) == (
        "Nomination to node n1 cleared: pod default/high preempted"
    )
    assert output.scheduling_summary(pod, [failed_before, cleared, failed_after]) == (
        "Pending: 0/1 nodes are available: 1 Insufficient cpu."
    )


def test_the_scheduling_section_keeps_why_a_nomination_was_cleared_after_later_failures() -> None:
    pod = encode_object(make_pod("mid").obj())
    nominated = event("Nominated", "Nominated to node n1 after preempting 1 pod(s)", "mid", seconds_ago=9)
    cleared = event("NominationCleared", "Nomination to node n1 cleared: pod default/high ...", "mid", seconds_ago=5)
    failed_after = event("FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.", "mid", seconds_ago=1)
    assert output.scheduling_lines(pod, [nominated, cleared, failed_after]) == [
        "Pending: 0/1 nodes are available: 1 Insufficient cpu.",
        "Nomination to node n1 cleared: pod default/high ...",
    ]
    assert output.scheduling_lines(pod, [nominated, cleared]) == ["Nomination to node n1 cleared: pod default/high ..."]
    renominated = event("Nominated", "Nominated to node n2 after preempting 1 pod(s)", "mid", seconds_ago=0)
    assert output.scheduling_lines(pod, [cleared, failed_after, renominated]) == [
        "Pending: 0/1 nodes are available: 1 Insufficient cpu."
    ]


def test_a_repeated_failure_counts_at_its_last_time() -> None:
    pod = encode_object(make_pod("mid").obj())
    cleared = event("NominationCleared", "cleared", "mid", seconds_ago=20)
    repeated = event("FailedScheduling", "again", "mid", seconds_ago=60, count=3, last_seconds_ago=2)
    assert output.scheduling_summary(pod, [repeated, cleared]) == "Pending: again"


@pytest.mark.parametrize(
    ("pod", "summary"),
    [
        (make_pod("p").node("n1"), "Bound to node n1"),
        (make_pod("p").node("n1").terminating(1.0, by_preemption=False), "Terminating on node n1"),
        (make_pod("p").node("n1").terminating(1.0), "Preempted by the scheduler on node n1"),
        (make_pod("p"), "Pending: no scheduling attempt recorded yet"),
    ],
)
def test_scheduling_summary_without_events(pod: Any, summary: str) -> None:
    assert output.scheduling_summary(encode_object(pod.obj()), []) == summary


def test_describe_pod_without_events_says_none() -> None:
    text = output.describe_pod(encode_object(make_pod("p").node("n1").obj()), [], NOW)
    assert text.endswith("Scheduling:\n  Bound to node n1\nEvents:  <none>\n")


def test_describe_node_lists_its_pods_and_allocated_totals() -> None:
    node = created(
        encode_object(
            make_node("n1")
            .capacity(cpu="4", memory="8Gi", pods=110)
            .label("zone", "a")
            .label("disk", "ssd")
            .taint("gpu", "true")
            .taint("dedicated", effect="NoExecute")
            .obj()
        ),
        HOUR,
    )
    pods = [
        running_pod(),
        terminating_pod(),
        created(encode_object(make_pod("elsewhere").req(cpu="3").node("n2").obj()), 10),
        pending_pod(),
    ]
    killed = event("Killing", "Stopping container c0", "victim", controller="kubelet")
    text = output.describe_node(node, pods, [killed], NOW)
    assert text == (
        "Name:               n1\n"
        "Roles:              <none>\n"
        "Labels:             disk=ssd\n"
        "                    zone=a\n"
        "CreationTimestamp:  Wed, 31 Dec 2025 23:00:00 +0000\n"
        "Taints:             gpu=true:NoSchedule\n"
        "                    dedicated:NoExecute\n"
        "Unschedulable:      false\n"
        "Capacity:\n"
        "  cpu:     4\n"
        "  memory:  8Gi\n"
        "  pods:    110\n"
        "Allocatable:\n"
        "  cpu:     4\n"
        "  memory:  8Gi\n"
        "  pods:    110\n"
        "Non-terminated Pods:  (2 in total)\n"
        "  Namespace           Name                  Priority  CPU Requests  Memory Requests  Age\n"
        "  ---------           ----                  --------  ------------  ---------------  ---\n"
        "  default             web                   1000      500m (12%)    1Gi (12%)        5s\n"
        "  default             victim (Terminating)  0         1 (25%)       0 (0%)           5h\n"
        "Allocated resources:\n"
        "  Resource           Requests\n"
        "  --------           --------\n"
        "  cpu                1500m (37%)\n"
        "  memory             1Gi (12%)\n"
        "  ephemeral-storage  0 (0%)\n"
        "Events:\n"
        "  Type    Reason   Age   From     Message\n"
        "  ----    ------   ----  ----     -------\n"
        "  Normal  Killing  5s    kubelet  Stopping container c0\n"
    )


def test_describe_node_totals_extended_resources_and_marks_cordoned_nodes() -> None:
    node = encode_object(make_node("g1").capacity(cpu="8", memory="1Gi", **{"nvidia.com/gpu": 4}).unschedulable().obj())
    pod = make_pod("train").req(cpu="1", **{"nvidia.com/gpu": 1}).node("g1").obj()
    text = output.describe_node(node, [encode_object(pod)], [], NOW)
    assert "Unschedulable:  true\n" in text
    assert "  nvidia.com/gpu     1 (25%)\n" in text


def test_describe_priority_class_and_pdb() -> None:
    assert output.describe_priority_class(encode_object(make_priority_class("high", 1000)), [], NOW) == (
        "Name:              high\n"
        "Value:             1000\n"
        "GlobalDefault:     false\n"
        "PreemptionPolicy:  PreemptLowerPriority\n"
        "Description:\n"
        "Events:            <none>\n"
    )
    text = output.describe_pdb(encode_object(make_pdb("web-pdb", allowed=2, app="web")), [], NOW)
    assert text.startswith(
        "Name:           web-pdb\nNamespace:      default\nMin available:  1\nSelector:       app=web\n"
    )
    assert "    Allowed disruptions:  2\n" in text

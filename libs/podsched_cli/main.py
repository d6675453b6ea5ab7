"""`podsched`: a kubectl-like client. `simulate` runs the scheduling library in-process; every other
command talks to the public gRPC API (`podsched.api.v1.PodSched`) of a running system.

Argument parsing and the order of calls live here; the calls are in `client`, the wording of every
line in `output`, the resource names in `resources`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from podsched.api.errors import ApiError
from podsched_cli import tracing
from podsched_cli.errors import RequestFailedError, UsageError

ENV_SERVER = "PODSCHED_SERVER"
ENV_KUBECONFIG = "PODSCHED_KUBECONFIG"
DEFAULT_TIMEOUT_SECONDS = 30.0
STDIN = "-"
# kubectl names standard input this way in its messages (`error parsing STDIN: ...`).
STDIN_SOURCE = "STDIN"
MANIFEST_EXTENSIONS = (".json", ".yaml", ".yml")


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
    try:
        from podsched.admission.resource_quota import load_admission_config

        admission = load_admission_config(args.admission_config or "")
    except OSError as error:
        print(f"error: cannot read --admission-config {args.admission_config}: {error.strerror}", file=sys.stderr)
        return 1
    except ApiError as error:
        print(f"error: invalid --admission-config {args.admission_config}: {error.message}", file=sys.stderr)
        return 1
    simulator = Simulator(config, admission=admission)
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


# --- shared plumbing of the client commands -----------------------------------------------------------


def resolve_server(flag: str | None, environ: Mapping[str, str]) -> str:
    """--server, else $PODSCHED_SERVER, else the address the local stack listens on."""
    from podsched_service.config import DEFAULT_QUEUE_ADDRESS

    return flag or environ.get(ENV_SERVER) or DEFAULT_QUEUE_ADDRESS


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _connection(args: argparse.Namespace) -> Any:
    """The server and credentials of the connection flags, the kubeconfig and the environment."""
    from podsched_cli.kubeconfig import Flags, resolve
    from podsched_service.config import DEFAULT_QUEUE_ADDRESS

    flags = Flags(
        server=args.server,
        kubeconfig=getattr(args, "kubeconfig", None),
        context=getattr(args, "context", None),
        token=getattr(args, "token", None),
        certificate_authority=getattr(args, "certificate_authority", None),
        client_certificate=getattr(args, "client_certificate", None),
        client_key=getattr(args, "client_key", None),
    )
    return resolve(flags, os.environ, DEFAULT_QUEUE_ADDRESS)


@contextmanager
def _connect(args: argparse.Namespace) -> Iterator[Any]:
    from podsched_cli.client import PodSchedClient

    client = PodSchedClient(args.connection, args.timeout)
    try:
        yield client
    finally:
        client.close()


def read_inputs(paths: list[str], read_stdin: Callable[[], str]) -> list[tuple[str, str]]:
    """(source, text) for every -f, all read before anything is sent: kubectl refuses the whole
    command when one path is missing. `-` is standard input (read once); a directory stands for
    its manifest files."""
    inputs = []
    stdin_text: str | None = None
    for path in paths:
        if path == STDIN:
            if stdin_text is None:
                stdin_text = read_stdin()
                inputs.append((STDIN_SOURCE, stdin_text))
            continue
        if os.path.isdir(path):
            # kubectl reads a directory's .json/.yaml/.yml files in name order (not recursively).
            names = sorted(n for n in os.listdir(path) if n.endswith(MANIFEST_EXTENSIONS))
            files = [os.path.join(path, name) for name in names]
            files = [file for file in files if os.path.isfile(file)]
        else:
            files = [path]
        for file in files:
            try:
                with open(file, encoding="utf-8") as handle:
                    inputs.append((file, handle.read()))
            except FileNotFoundError:
                raise UsageError(f'the path "{file}" does not exist') from None
            except OSError as error:
                raise UsageError(f"cannot read {file}: {error.strerror}") from None
    return inputs


def _documents(args: argparse.Namespace) -> Iterator[tuple[str, dict[str, Any] | None, str | None]]:
    """(source, document, None) for every object of every -f, or (source, None, error line) for a
    file or document kubectl would reject on the client side; nothing of a malformed file is sent."""
    from podsched.api.documents import load_documents
    from podsched_cli.resources import client_side_error

    for source, text in read_inputs(args.filename, sys.stdin.read):
        try:
            documents = load_documents(text, source)
        except ApiError as error:
            yield source, None, error.as_client_side(source).kubectl_message()
            continue
        for document in documents:
            problem = client_side_error(document, source, args.namespace or "")
            yield source, (None if problem else document), problem


# --- apply --------------------------------------------------------------------------------------------


def _apply(args: argparse.Namespace) -> int:
    from podsched_cli.output import format_apply_response

    failed = False
    dry_run = args.dry_run == "server"
    with _connect(args) as client:
        for source, document, problem in _documents(args):
            if document is None:
                _err(str(problem))
                failed = True
                continue
            try:
                response = client.apply(document, dry_run=dry_run, source=source)
            except RequestFailedError as error:
                if error.unreachable:
                    raise
                # kubectl goes on with the other objects and fails at the end.
                _err(str(error))
                failed = True
                continue
            _out("".join(line + "\n" for line in format_apply_response(response, document, dry_run=dry_run)))
    return 1 if failed else 0


# --- scale --------------------------------------------------------------------------------------------


def _scale(args: argparse.Namespace) -> int:
    """`kubectl scale deployment/web --replicas=3`: the object read, spec.replicas set, applied back
    (Deployments and ReplicaSets; kubectl's `NAME scaled` on success)."""
    from podsched_cli.resources import DEPLOYMENT, REPLICA_SET, parse_targets

    if args.replicas < 0:
        raise UsageError("The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0")
    targets = parse_targets(args.resources)
    failed = False
    with _connect(args) as client:
        for resource, name in targets:
            if resource not in (DEPLOYMENT, REPLICA_SET):
                _err(f'error: the server does not allow scaling "{resource.plural}" with podsched scale')
                failed = True
                continue
            if name is None:
                raise UsageError("resource(s) were provided, but no name was specified")
            try:
                (obj,) = client.get(resource.plural, name, args.namespace or "")
                obj.setdefault("spec", {})["replicas"] = args.replicas
                client.apply(obj, dry_run=False, source="scale")
            except RequestFailedError as error:
                if error.unreachable:
                    raise
                _err(str(error))
                failed = True
                continue
            _out(f"{resource.qualified}/{name} scaled\n")
    return 1 if failed else 0


# --- get ----------------------------------------------------------------------------------------------


def _get(args: argparse.Namespace) -> int:
    from podsched_cli.output import format_names, format_objects, format_table, no_resources_message
    from podsched_cli.resources import parse_targets

    targets = parse_targets(args.resources)
    named = any(name is not None for _, name in targets)
    if named and args.all_namespaces:
        raise UsageError("a resource cannot be retrieved by name across all namespaces")
    if args.watch:
        if len({resource.plural for resource, _ in targets}) > 1:
            raise UsageError("you may only specify a single resource type")
        return _get_watch(args, targets[0][0], {name for _, name in targets if name is not None})
    failed = False
    groups: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
    with _connect(args) as client:
        for resource, name in targets:
            try:
                found = client.get(
                    resource.plural, name or "", args.namespace or "", all_namespaces=args.all_namespaces
                )
            except RequestFailedError as error:
                if error.unreachable:
                    raise
                _err(str(error))
                failed = True
                continue
            groups.setdefault(resource.plural, (resource, []))[1].extend(found)
    objects = [obj for _, found in groups.values() for obj in found]
    if args.output in ("json", "yaml"):
        if objects or not named:
            _out(format_objects(objects, args.output, single=len(targets) == 1 and named))
    elif args.output == "name":
        _out(format_names(objects))
    elif objects:
        now = time.time()
        tables = [
            format_table(resource, found, now, wide=args.output == "wide", all_namespaces=args.all_namespaces)
            for resource, found in groups.values()
            if found
        ]
        _out("\n".join(tables))
    elif not failed and not named:
        _err(no_resources_message(targets[0][0], args.namespace or "", args.all_namespaces))
    return 1 if failed else 0


def _get_watch(args: argparse.Namespace, resource: Any, names: set[str]) -> int:
    """`get KIND [NAME...] --watch`: the current objects as `get` prints them, then one row (or JSON line)
    per change until Ctrl-C, across dropped connections and server restarts, nothing shown twice. With
    --output-watch-events each JSON/YAML item is kubectl's {"type": ADDED|MODIFIED|DELETED, "object": ...};
    after a relist, objects that went while the watch was away come as DELETED with their last state."""
    from podsched_cli.output import (
        column_widths,
        format_event_json_line,
        format_objects,
        format_table,
        no_resources_message,
        padded_row,
        table_header_and_rows,
    )
    from podsched_cli.watching import ObjectsSeen, WatchPoint
    from podsched_proto.api.v1 import api_pb2
    from podsched_proto.events.v1 import events_pb2

    namespace = "" if args.all_namespaces or not resource.namespaced else (args.namespace or "default")
    template = api_pb2.WatchRequest(kinds=[resource.kind], namespace=namespace)
    seen = ObjectsSeen()
    wide = args.output == "wide"
    widths: list[int] | None = None
    listed: list[tuple[str, dict[str, Any]]] | None = []  # the first state, printed as one table at its bookmark

    def relisting(request: api_pb2.WatchRequest) -> None:
        if request.since_resource_version == 0:
            seen.start_relist()

    def show(changes: list[tuple[str, dict[str, Any]]]) -> None:
        nonlocal widths
        if not changes:
            return
        if args.output in ("json", "yaml"):
            items = [{"type": kind, "object": obj} if args.output_watch_events else obj for kind, obj in changes]
            if args.output == "json":
                _out("".join(format_event_json_line(item) for item in items))
            else:
                _out("".join("---\n" + format_objects([item], "yaml", single=True) for item in items))
            return
        objects = [obj for _, obj in changes]
        header, rows = table_header_and_rows(
            resource, objects, time.time(), wide=wide, all_namespaces=args.all_namespaces
        )
        if widths is None:
            widths = column_widths(header, rows)
            _out(format_table(resource, objects, time.time(), wide=wide, all_namespaces=args.all_namespaces))
        else:
            _out("".join(padded_row(row, widths) + "\n" for row in rows))

    with _connect(args) as client:
        watch = client.watch(template, WatchPoint(), on_open=relisting)
        try:
            for item in watch:
                which = item.WhichOneof("item")
                if which == "change":
                    change = item.change
                    obj = json.loads(change.object_json)
                    if names and change.object.name not in names:
                        continue
                    deleted = change.type == events_pb2.ObjectChange.DELETED
                    known = change.object.uid in seen.objects  # a relisted object shown before changed
                    if seen.is_new(change.object.uid, change.resource_version, obj, deleted):
                        kind = "MODIFIED" if known and not deleted else events_pb2.ObjectChange.Type.Name(change.type)
                        if listed is not None:
                            listed.append((kind, obj))
                        else:
                            show([(kind, obj)])
                elif which == "bookmark_resource_version":
                    gone = [("DELETED", obj) for obj in seen.end_relist()]
                    if listed is not None:
                        if not listed and not names:
                            _err(no_resources_message(resource, args.namespace or "", args.all_namespaces))
                        show(listed)
                        listed = None
                    show(gone)
        except KeyboardInterrupt:
            return 0  # Ctrl-C is how a watch ends
        finally:
            watch.cancel()
    return 0


# --- delete -------------------------------------------------------------------------------------------


def delete_grace_period(grace_period: int, force: bool) -> int | None:
    """kubectl's rules: a negative value means the object's own period; --force means 0, and 0
    without --force becomes 1 so that a typo cannot skip graceful termination."""
    if force:
        return 0 if grace_period < 0 else grace_period
    if grace_period < 0:
        return None
    return max(grace_period, 1)


def _delete(args: argparse.Namespace) -> int:
    from podsched_cli.output import delete_line
    from podsched_cli.resources import parse_targets, resource_type_of_kind

    if args.filename and args.resources:
        raise UsageError(
            "when paths, URLs, or stdin is provided as input, you may not specify resource arguments as well"
        )
    if args.all or args.selector or args.field_selector:
        return _delete_collection(args)
    if args.all_namespaces and args.resources:
        raise UsageError("a resource cannot be retrieved by name across all namespaces")
    if not args.filename and not args.resources:
        raise UsageError("You must provide one or more resources by argument or filename.")
    failed = False
    requests: list[tuple[Any, str, str]] = []  # (resource type, name, namespace)
    if args.filename:
        for _, document, problem in _documents(args):
            if document is None:
                _err(str(problem))
                failed = True
                continue
            resource = resource_type_of_kind(str(document.get("kind", "")))
            raw_metadata = document.get("metadata")
            metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
            assert resource is not None  # client_side_error let only served kinds through
            namespace = str(metadata.get("namespace") or args.namespace or "") if resource.namespaced else ""
            requests.append((resource, str(metadata.get("name", "")), namespace))
    else:
        for resource, name in parse_targets(args.resources):
            if name is None:
                raise UsageError("resource(s) were provided, but no name was specified")
            requests.append((resource, name, args.namespace or ""))
    grace = delete_grace_period(args.grace_period, args.force)
    dry_run = args.dry_run == "server"
    if args.force:
        _err(
            "Warning: Immediate deletion does not wait for confirmation that the running resource has been "
            "terminated. The resource may continue to run on the cluster indefinitely."
        )
    with _connect(args) as client:
        for resource, name, namespace in requests:
            try:
                client.delete(resource.plural, name, namespace, grace_period_seconds=grace, dry_run=dry_run)
            except RequestFailedError as error:
                if error.unreachable:
                    raise
                _err(str(error))
                failed = True
                continue
            _out(delete_line(resource, name, force=args.force, dry_run=dry_run, output=args.output) + "\n")
    return 1 if failed else 0


def _delete_collection(args: argparse.Namespace) -> int:
    """`delete KIND... --all | -l SELECTOR | --field-selector SELECTOR [-n NS | -A]`: one DeleteCollection
    per kind; a line per deleted object as for a delete by name (`--dry-run=server`: what would be
    deleted, nothing is), `No resources found` when none matched."""
    from podsched_cli.output import delete_line
    from podsched_cli.resources import parse_targets

    if args.filename:
        raise UsageError("--all, --selector and --field-selector select objects by kind: give a KIND, not -f")
    if args.all and args.selector:
        raise UsageError("cannot set --all and --selector at the same time")
    if args.all and args.field_selector:
        raise UsageError("cannot set --all and --field-selector at the same time")
    if not args.resources:
        raise UsageError("You must provide one or more resources by argument or filename.")
    kinds = []
    for resource, name in parse_targets(args.resources):
        if name is not None:
            raise UsageError("name cannot be provided when a selector is specified")
        kinds.append(resource)
    grace = delete_grace_period(args.grace_period, args.force)
    dry_run = args.dry_run == "server"
    if args.force:
        _err(
            "Warning: Immediate deletion does not wait for confirmation that the running resource has been "
            "terminated. The resource may continue to run on the cluster indefinitely."
        )
    deleted = 0
    failed = False
    with _connect(args) as client:
        for resource in kinds:
            try:
                response = client.delete_collection(
                    resource.plural,
                    args.namespace or "",
                    all_namespaces=args.all_namespaces,
                    label_selector=args.selector,
                    field_selector=args.field_selector,
                    grace_period_seconds=grace,
                    dry_run=dry_run,
                )
            except RequestFailedError as error:
                if error.unreachable:
                    raise
                _err(str(error))
                failed = True
                continue
            for obj in response.deleted:
                _out(delete_line(resource, obj.name, force=args.force, dry_run=dry_run, output=args.output) + "\n")
            for line in response.refused:
                _err(line)
            deleted += len(response.deleted)
            failed = failed or bool(response.refused)
    if not deleted and not failed:
        _out("No resources found\n")
    return 1 if failed else 0


# --- describe -----------------------------------------------------------------------------------------


def _describe(args: argparse.Namespace) -> int:
    from podsched_cli.output import (
        describe_node,
        describe_pdb,
        describe_pod,
        describe_pod_group,
        describe_priority_class,
        describe_resource_quota,
        event_to_dict,
        no_resources_message,
    )
    from podsched_cli.resources import (
        DEPLOYMENT,
        JOB,
        NODE,
        POD,
        POD_GROUP,
        PRIORITY_CLASS,
        REPLICA_SET,
        RESOURCE_QUOTA,
        parse_targets,
    )
    from podsched_cli.workload_output import describe_job, describe_replicas

    targets = parse_targets(args.resources)
    failed = False
    descriptions: list[str] = []
    with _connect(args) as client:
        for resource, name in targets:
            try:
                objects = client.get(resource.plural, name or "", args.namespace or "")
                if not objects and name is None:
                    _err(no_resources_message(resource, args.namespace or "", False))
                for obj in objects:
                    uid = str((obj.get("metadata") or {}).get("uid", ""))
                    # involved_uid selects the object's events; asked in the object's namespace, so a
                    # tenant (who may not list events across namespaces) can describe its own pods.
                    namespace = str((obj.get("metadata") or {}).get("namespace", ""))
                    listed = (
                        client.list_events(namespace, all_namespaces=not namespace, involved_uid=uid) if uid else []
                    )
                    events = [event_to_dict(e) for e in listed]
                    now = time.time()
                    if resource is POD:
                        descriptions.append(describe_pod(obj, events, now, _protection(client, obj, events)))
                    elif resource is NODE:
                        pods = client.get(POD.plural, all_namespaces=True)
                        descriptions.append(describe_node(obj, pods, events, now))
                    elif resource is PRIORITY_CLASS:
                        descriptions.append(describe_priority_class(obj, events, now))
                    elif resource is RESOURCE_QUOTA:
                        descriptions.append(describe_resource_quota(obj))
                    elif resource is JOB:
                        descriptions.append(describe_job(obj, events, now))
                    elif resource is POD_GROUP:
                        pods = client.get(POD.plural, "", namespace)
                        descriptions.append(describe_pod_group(obj, pods, events, now))
                    elif resource in (DEPLOYMENT, REPLICA_SET):
                        descriptions.append(describe_replicas(obj, events, now))
                    else:
                        descriptions.append(describe_pdb(obj, events, now))
            except RequestFailedError as error:
                if error.unreachable:
                    raise
                _err(str(error))
                failed = True
    _out("\n\n".join(descriptions))
    return 1 if failed else 0


def _protection(client: Any, pod: Mapping[str, Any], events: list[dict[str, Any]]) -> Any:
    """What describe pod reads to say whether preemption may take the pod: its PriorityClass, its
    namespace's PDBs, its preemptor. Each read is best effort (gone, or not allowed: left out)."""
    from podsched_cli.output import Protection

    def read(resource: str, name: str = "", namespace: str = "") -> list[dict[str, Any]]:
        try:
            return list(client.get(resource, name, namespace))
        except RequestFailedError as error:
            if error.unreachable:
                raise
            return []

    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    class_name = str(spec.get("priorityClassName") or "")
    classes = read("priorityclasses", class_name) if class_name else []
    pdbs = read("poddisruptionbudgets", "", str(meta.get("namespace") or "default"))
    preemptor = None
    related = [e.get("related") or {} for e in events if e.get("reason") == "Preempted"]
    if related and related[-1].get("name"):
        # A pod's preemptor, or a PodGroup's (pod-group preemption, GenericWorkload).
        resource = "podgroups" if related[-1].get("kind") == "PodGroup" else "pods"
        found = read(resource, str(related[-1]["name"]), str(related[-1].get("namespace") or ""))
        preemptor = found[0] if found else None
    group_name = str((spec.get("schedulingGroup") or {}).get("podGroupName") or "")
    if not group_name:
        return Protection(classes[0] if classes else None, pdbs, preemptor)
    namespace = str(meta.get("namespace") or "default")
    groups = read("podgroups", group_name, namespace)
    members = [
        p
        for p in read("pods", "", namespace)
        if str(((p.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName") or "") == group_name
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    return Protection(
        classes[0] if classes else None,
        pdbs,
        preemptor,
        pod_group_read=True,
        pod_group=groups[0] if groups else None,
        pod_group_pods=len(members),
    )


# --- events -------------------------------------------------------------------------------------------


def _events(args: argparse.Namespace) -> int:
    from podsched_cli.output import (
        EventDeduplicator,
        as_list,
        column_widths,
        event_header,
        event_row,
        event_to_dict,
        format_event_json_line,
        format_events,
        format_json,
        format_yaml,
        no_events_message,
        padded_row,
        table,
    )

    namespace = args.namespace or "default"
    with _connect(args) as client:
        watch = None
        try:
            listed = client.list_events(args.namespace or "", all_namespaces=args.all_namespaces)
            if args.watch:
                # Follows from the newest event listed (none: from the oldest the log holds), so nothing
                # recorded after the list is missed; a dropped connection resumes the same way.
                watch = client.watch_events("" if args.all_namespaces else namespace)
                watch.point.event_sequence = max((e.sequence for e in listed), default=-1)
            events = [event_to_dict(e) for e in listed]
            if watch is None:
                if args.output == "json":
                    _out(format_json(as_list(events)))
                elif args.output == "yaml":
                    _out(format_yaml(as_list(events)))
                elif events:
                    _out(format_events(events, time.time(), all_namespaces=args.all_namespaces))
                else:
                    _err(no_events_message(namespace, args.all_namespaces))
                return 0
            seen = EventDeduplicator()
            for proto in listed:
                seen.is_new(proto.sequence, proto.count)
            header = event_header(all_namespaces=args.all_namespaces)
            widths: list[int] | None = None

            def show(batch: list[dict[str, Any]]) -> None:
                nonlocal widths
                if args.output == "json":
                    _out("".join(format_event_json_line(event) for event in batch))
                elif args.output == "yaml":
                    _out("".join("---\n" + format_yaml(event) for event in batch))
                elif batch:
                    rows = [event_row(event, time.time(), all_namespaces=args.all_namespaces) for event in batch]
                    if widths is None:
                        widths = column_widths(header, rows)
                        _out("\n".join(table(header, rows)) + "\n")
                    else:
                        _out("".join(padded_row(row, widths) + "\n" for row in rows))

            show(events)
            for item in watch:
                proto = item.event
                if item.WhichOneof("item") == "event" and seen.is_new(proto.sequence, proto.count):
                    show([event_to_dict(proto)])
        except KeyboardInterrupt:
            # Ctrl-C is how a watch ends.
            return 0
        finally:
            if watch is not None:
                watch.cancel()
    return 0


# --- the parser ---------------------------------------------------------------------------------------


def _global_options(suppress: bool) -> argparse.ArgumentParser:
    """--server and --timeout, accepted before or after the command like kubectl's global flags.
    On the commands their defaults are suppressed, so they do not overwrite a value given before."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--server",
        default=argparse.SUPPRESS if suppress else None,
        help=f"address of the podsched API (default: ${ENV_SERVER}, else 127.0.0.1:50051)",
    )
    parent.add_argument(
        "--timeout",
        type=float,
        default=argparse.SUPPRESS if suppress else DEFAULT_TIMEOUT_SECONDS,
        help="seconds to wait for each request (default: 30)",
    )
    # kubectl's connection flags; the kubeconfig (docs/security.md) holds the same settings.
    for flag, help_text in (
        ("--kubeconfig", f"a kubeconfig-shaped file with the server and credentials (default: ${ENV_KUBECONFIG})"),
        ("--context", "the kubeconfig context to use (default: its current-context)"),
        ("--token", "bearer token for authentication to the API server"),
        ("--certificate-authority", "path to a CA bundle that verifies the server (speak TLS)"),
        ("--client-certificate", "path to a client certificate file for TLS"),
        ("--client-key", "path to a client key file for TLS"),
    ):
        parent.add_argument(flag, default=argparse.SUPPRESS if suppress else None, help=help_text)
    return parent


def _namespace_options(command: argparse.ArgumentParser, all_namespaces: bool = True) -> None:
    command.add_argument("-n", "--namespace", default="", help="namespace (default: default)")
    if all_namespaces:
        command.add_argument(
            "-A", "--all-namespaces", action="store_true", help="every namespace (overrides --namespace)"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="podsched",
        description="Kubernetes-style pod priority and preemption.",
        parents=[_global_options(suppress=False)],
    )
    commands = parser.add_subparsers(dest="command", required=True)
    shared = [_global_options(suppress=True)]
    simulate = commands.add_parser(
        "simulate",
        help="run the scheduling algorithm in one process on a simulated clock",
        description="Apply files in order; after each, schedule until nothing changes (grace periods and "
        "backoff elapse in simulated time). Prints every pod ever created, the events and the rejected objects.",
    )
    simulate.add_argument("-f", "--filename", action="append", required=True, help="manifest file (- for stdin)")
    simulate.add_argument("--config", help="a kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration file")
    simulate.add_argument(
        "--admission-config",
        help="an apiserver.config.k8s.io/v1 AdmissionConfiguration file (ResourceQuota limitedResources)",
    )
    simulate.add_argument("-o", "--output", choices=("json", "yaml", "table"), default="table")
    simulate.set_defaults(handler=_simulate)

    apply = commands.add_parser(
        "apply",
        parents=shared,
        help="create or update objects from files",
        description="Send every object of the files to the server; exit 0 once all are durable.",
    )
    apply.add_argument("-f", "--filename", action="append", required=True, help="manifest file (- for stdin)")
    apply.add_argument(
        "--dry-run",
        choices=("none", "server"),
        default="none",
        help="server: validate and predict the scheduling outcome without storing anything",
    )
    _namespace_options(apply, all_namespaces=False)
    apply.set_defaults(handler=_apply)

    get = commands.add_parser(
        "get",
        parents=shared,
        help="list objects",
        description="KIND is pods|nodes|priorityclasses|poddisruptionbudgets|resourcequotas|deployments|"
        "replicasets|jobs|podgroups (or po, no, pc, pdb, quota, deploy, rs, pg, singular).",
    )
    get.add_argument("resources", nargs="+", metavar="KIND [NAME...]", help="KIND [NAME...] or KIND/NAME...")
    _namespace_options(get)
    get.add_argument("-o", "--output", choices=("wide", "json", "yaml", "name"), default="")
    get.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="after listing, print every change until Ctrl-C (resumes after a dropped connection)",
    )
    get.add_argument(
        "--output-watch-events",
        action="store_true",
        help="with --watch and -o json|yaml: each item as {type: ADDED|MODIFIED|DELETED, object: ...}",
    )
    get.set_defaults(handler=_get)

    delete = commands.add_parser(
        "delete", parents=shared, help="delete objects by name, by file, or every one a selector picks"
    )
    delete.add_argument(
        "resources", nargs="*", metavar="KIND NAME", help="KIND NAME... or KIND/NAME...; KIND alone with --all or -l"
    )
    delete.add_argument("-f", "--filename", action="append", default=[], help="manifest file (- for stdin)")
    delete.add_argument("--all", action="store_true", help="every object of the kind in the namespace (or with -A)")
    delete.add_argument(
        "-l", "--selector", default="", help="label selector: the objects it matches (app=web, 'env in (a,b)', !x)"
    )
    delete.add_argument(
        "--field-selector",
        default="",
        help="field selector (metadata.name, spec.nodeName, status.phase...; '=', '==', '!=')",
    )
    delete.add_argument(
        "--grace-period",
        type=int,
        default=-1,
        help="seconds a pod gets to terminate; -1 uses its terminationGracePeriodSeconds",
    )
    delete.add_argument("--force", action="store_true", help="remove at once, without graceful termination")
    delete.add_argument(
        "--dry-run",
        choices=("none", "server"),
        default="none",
        help="server: say what would be deleted (the server checks each delete) without deleting anything",
    )
    delete.add_argument(
        "-o", "--output", choices=("name",), default="", help="name: one kind/name line per deleted object"
    )
    _namespace_options(delete)
    delete.set_defaults(handler=_delete)

    scale = commands.add_parser(
        "scale", parents=shared, help="set the replicas of a Deployment or ReplicaSet (kubectl scale)"
    )
    scale.add_argument("resources", nargs="+", metavar="KIND [NAME...]", help="KIND NAME or KIND/NAME")
    scale.add_argument("--replicas", type=int, required=True, help="the new number of replicas")
    _namespace_options(scale, all_namespaces=False)
    scale.set_defaults(handler=_scale)

    describe = commands.add_parser(
        "describe", parents=shared, help="show one object in detail, with its events and why it is where it is"
    )
    describe.add_argument("resources", nargs="+", metavar="KIND [NAME...]", help="KIND [NAME...] or KIND/NAME...")
    _namespace_options(describe, all_namespaces=False)
    describe.set_defaults(handler=_describe)

    events = commands.add_parser("events", parents=shared, help="list (and follow) scheduling events")
    _namespace_options(events)
    events.add_argument("-w", "--watch", action="store_true", help="after listing, print new events until Ctrl-C")
    events.add_argument("-o", "--output", choices=("json", "yaml"), default="")
    events.set_defaults(handler=_events)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    flush_traces = tracing.setup()
    try:
        if args.command != "simulate":
            args.connection = _connection(args)
            # The kubeconfig context's namespace is the default for -n, as with kubectl.
            if getattr(args, "namespace", None) == "" and args.connection.namespace:
                args.namespace = args.connection.namespace
        return int(args.handler(args))
    except UsageError as error:
        _err(f"error: {error}")
        return 1
    except RequestFailedError as error:
        _err(str(error))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`podsched events -w | head`): not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    finally:
        flush_traces()


if __name__ == "__main__":
    sys.exit(main())

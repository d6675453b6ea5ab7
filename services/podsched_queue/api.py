"""The public API (PodSched): kubectl's verbs as gRPC calls, each converted from and to its proto and
handed on: writes to the binder, reads to the queue's replica, dry runs to the filter and
preemption services. Every call is authenticated and authorized (access.py) and every write audited."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import grpc
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from podsched.api.documents import parse_json
from podsched.api.errors import ApiError, fit_status_message, shorten
from podsched.api.manifests import GATED_KINDS, check_served, decode_object
from podsched.api.resources import RESOURCE_TYPES, ResourceType, find_resource_type
from podsched.api.types import (
    KIND_NODE,
    KIND_PDB,
    KIND_POD,
    KIND_POD_GROUP,
    KIND_PRIORITY_CLASS,
    KIND_RESOURCE_QUOTA,
    ApiObject,
    Pod,
)
from podsched.cluster.admission import CREATED, UNCHANGED, admit_delete
from podsched.cluster.dry_run import admit_without_storing
from podsched.cluster.state import Cluster
from podsched.cluster.store import ADDED
from podsched_proto.api.v1 import api_pb2, api_pb2_grpc
from podsched_proto.audit.v1 import audit_pb2
from podsched_proto.binder.v1 import binder_pb2
from podsched_proto.events.v1 import events_pb2
from podsched_proto.filter.v1 import filter_pb2
from podsched_proto.preemption.v1 import preemption_pb2
from podsched_service import telemetry
from podsched_service.codec import event_to_proto, status_code, to_json
from podsched_service.log_history import ChangesAfter, EventsAfter, TooOld, read_after
from podsched_service.scheduling import DRY_RUN_UID

from .access import ApiCall, Target, events_target
from .delete_collection import delete_collection
from .peers import RPC_TIMEOUT
from .watch import UNRESPONSIVE_CODE

if TYPE_CHECKING:
    from .service import QueueService

log = logging.getLogger(__name__)

ALL_KINDS = frozenset(resource.kind for resource in RESOURCE_TYPES)
API_PATH = "/" + api_pb2.DESCRIPTOR.services_by_name["PodSched"].full_name + "/"  # + method: the gRPC path

MAX_APPLY_BATCH = 1000


class ItemContext:
    """The servicer context of one object of an ApplyBatch: the call's metadata, peer and
    credentials, but an abort ends only this object (its code and message become its result).

    The call's metadata and peer are read from the call once for all its objects (`metadata`,
    `peer`): each object reads its metadata twice (its bearer token, its audit record's user agent),
    and grpc.aio builds the tuple anew each time, about 1.3 us."""

    def __init__(self, context: grpc.aio.ServicerContext, metadata: Any, peer: str) -> None:
        self._context = context
        self._metadata = metadata
        self._peer = peer
        self._code: grpc.StatusCode | None = None
        self._details: str | None = None

    def invocation_metadata(self) -> Any:
        return self._metadata

    def peer(self) -> str:
        return self._peer

    async def abort(self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()) -> None:
        self._code, self._details = code, details
        raise grpc.aio.AbortError()

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def details(self) -> str | None:
        return self._details

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class PodSchedServicer(api_pb2_grpc.PodSchedServicer):
    """The public API: thin translation to the binder (writes), the replica (reads) and the filter
    and preemption services (dry runs)."""

    def __init__(self, service: QueueService) -> None:
        self.service = service

    async def resource_type(self, word: str, context: grpc.aio.ServicerContext) -> ResourceType:
        found = find_resource_type(word)
        if found is None:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f'error: the server doesn\'t have a resource type "{shorten(word)}"'
            )
        assert found is not None
        return found

    async def caught_up(self, context: grpc.aio.ServicerContext) -> None:
        try:
            await self.service.caught_up()
        except TimeoutError:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                "Error from server (ServiceUnavailable): the queue service is catching up with the log; retry",
            )

    async def _events_caught_up(self, context: grpc.aio.ServicerContext) -> None:
        try:
            await self.service.events_caught_up()
        except TimeoutError:
            await context.abort(
                grpc.StatusCode.UNAVAILABLE,
                "Error from server (ServiceUnavailable): the queue service is still loading events from the log; retry",
            )

    async def forward_error(self, context: grpc.aio.ServicerContext, error: grpc.aio.AioRpcError) -> None:
        code = error.code()
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, f"Error from server (ServiceUnavailable): {error.details()}"
            )
        await context.abort(code, error.details() or "")

    # Every call is authenticated and authorized (services/podsched_queue/access.py); a write's
    # outcome, whatever it is, goes to the API audit log before the client hears it.

    async def Apply(self, request: api_pb2.ApplyRequest, context: grpc.aio.ServicerContext) -> Any:
        # The body is parsed once: the call's target is read from it, then it is decoded. A body
        # that is not JSON is refused once the caller is authenticated (in _apply).
        try:
            document: Any = parse_json(request.object_json)
            parse_error: ValueError | None = None
        except ValueError as error:
            document, parse_error = None, error
        # "create" until the object is known to exist (and the caller may see it): then "patch".
        call = self.service.access.call(
            API_PATH + "Apply", write=not request.dry_run, verb="create", target=Target.of_parsed(document)
        )
        return await self.service.access.audited(
            context, call, self._apply(request, context, call, document, parse_error)
        )

    async def ApplyBatch(self, request: api_pb2.ApplyBatchRequest, context: grpc.aio.ServicerContext) -> Any:
        if len(request.requests) > MAX_APPLY_BATCH:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"error: {len(request.requests)} objects in one ApplyBatch; at most {MAX_APPLY_BATCH}",
            )

        metadata, peer = context.invocation_metadata(), context.peer()

        async def one(item: api_pb2.ApplyRequest) -> api_pb2.ApplyResult:
            item_context = ItemContext(context, metadata, peer)
            try:
                return api_pb2.ApplyResult(response=await self.Apply(item, item_context))
            except grpc.aio.AbortError:
                code = item_context.code() or grpc.StatusCode.UNKNOWN
                return api_pb2.ApplyResult(code=code.value[0], message=item_context.details() or "")

        results = await asyncio.gather(*(one(item) for item in request.requests))
        return api_pb2.ApplyBatchResponse(results=results)

    async def _apply(
        self,
        request: api_pb2.ApplyRequest,
        context: grpc.aio.ServicerContext,
        call: ApiCall,
        document: Any,
        parse_error: ValueError | None,
    ) -> Any:
        service = self.service
        access = service.access
        user = await access.authenticate(context, call)
        if parse_error is not None:
            message = f"error: error parsing {shorten(request.source)}: {parse_error}"
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        await self.caught_up(context)
        target = call.target
        # kubectl apply creates a new object and patches an existing one. An object the caller may
        # not read counts as new, so a refusal does not tell whether it exists.
        stored = stored_object(service.cluster, target) if target.known is not None else None
        readable = stored is not None and access.decide(target.attributes(user, "get")).allowed
        call.verb = "patch" if readable else "create"
        attributes = target.attributes(user, call.verb, named=call.verb != "create")
        # kubectl sends no patch for an unchanged object (only its GET): a caller who may read but
        # not patch may re-apply it unchanged. Decided after admission, which says whether it changed.
        unchanged_only = False
        if target.resource:  # else the body names no kind and admission refuses it below
            if call.verb == "patch" and not access.decide(attributes).allowed:
                unchanged_only = True
            else:
                await access.authorize(context, call, attributes)
        if request.dry_run or unchanged_only or not binder_admits(target):
            action, admitted = await self._admit(document, context)
        if unchanged_only:
            if action != UNCHANGED:
                await access.deny(context, call, attributes)
            call.decision = audit_pb2.AuditEvent.ALLOW
            call.reason = f"unchanged, so only get is needed: {access.decide(target.attributes(user, 'get')).reason}"
        if request.dry_run:
            response = api_pb2.ApplyResponse(action=action, object_json=to_json(admitted))
            if isinstance(admitted, Pod) and not admitted.spec.node_name:
                response.dry_run.CopyFrom(await self._predict(admitted, context))
            return response
        try:
            written = await service.writes.write(request.object_json)
        except grpc.aio.AioRpcError as error:
            await self.forward_error(context, error)
        service.saw(written.resource_version, written.event_sequence)
        call.resource_version = written.resource_version
        call.object_json = written.object_json
        call.uid = written.uid
        call.created = written.action == CREATED
        return api_pb2.ApplyResponse(action=written.action, object_json=written.object_json)

    async def _admit(self, document: Any, context: grpc.aio.ServicerContext) -> tuple[str, ApiObject]:
        """Decode and admit the body on this replica's copy, as the binder would; aborts the call
        with the refusal's status and kubectl line."""
        service = self.service
        try:
            obj = decode_object(document, owned=True)
            check_served(obj, service.scheduler_config.feature_enabled)  # PodGroup: only with GenericWorkload
            return admitted_on_copy(service.cluster, obj)
        except ApiError as error:
            trace.get_current_span().set_status(StatusCode.ERROR, error.kubectl_message())
            await context.abort(status_code(error), error.kubectl_message())
            raise  # abort raises; this says so to the reader and to type checkers

    async def _predict(self, pod: Pod, context: grpc.aio.ServicerContext) -> api_pb2.DryRunOutcome:
        """Filter, then PostFilter, for a pod that is not stored: where it would go now. A pod of a
        PodGroup (GenericWorkload) that GangScheduling's PreEnqueue would hold back says why; one it
        would let in is predicted alone, with a line saying it binds with its group or not at all."""
        service = self.service
        explanations: list[str] = []
        if service.pod_groups is not None and (group := service.pod_groups.group_of(pod)) is not None:
            held = service.pod_groups.gang.pre_enqueue(pod, unstored=True)
            if held is not None:
                return api_pb2.DryRunOutcome(message=held.message)
            if group.is_gang:
                size = service.pod_groups.pod_groups.all_pods_count(group.namespace, group.name) + 1
                explanations.append(
                    f"scheduled with pod group {group.namespace}/{group.name} ({size} pods, minCount "
                    f"{group.min_count}): all of them bind together or none does"
                )
        elif service.pod_groups is not None and pod.spec.pod_group_name is not None:
            held = service.pod_groups.gang.pre_enqueue(pod, unstored=True)
            if held is not None:
                return api_pb2.DryRunOutcome(message=held.message)
        outcome = await self._predict_alone(pod, context)
        outcome.explanations.extend(explanations)
        return outcome

    async def _predict_alone(self, pod: Pod, context: grpc.aio.ServicerContext) -> api_pb2.DryRunOutcome:
        service = self.service
        pod.metadata.uid = pod.metadata.uid or DRY_RUN_UID
        ref = filter_pb2.PodToPlace(pod_json=to_json(pod))
        try:
            found = await service.filter.FindNodes(
                filter_pb2.FindNodesRequest(pods=[ref], min_resource_version=service.view_version, dry_run=True),
                timeout=RPC_TIMEOUT,
            )
            placement = found.placements[0]
            if placement.node_name:
                return api_pb2.DryRunOutcome(node_name=placement.node_name)
            profile = service.scheduler_config.profile_named(pod.spec.scheduler_name)
            if placement.error or profile is None or not profile.preemption_enabled:
                return api_pb2.DryRunOutcome(message=placement.error or placement.message)
            decision = await service.preemption.PostFilter(
                preemption_pb2.PostFilterRequest(
                    pod=ref, filter_result=placement, min_resource_version=service.view_version
                ),
                timeout=RPC_TIMEOUT,
            )
        except grpc.aio.AioRpcError as error:
            await self.forward_error(context, error)
        return api_pb2.DryRunOutcome(
            nominated_node_name=decision.nominated_node_name,
            victims=decision.victims,
            message=decision.message,
            explanations=decision.explanations,
        )

    async def Get(self, request: api_pb2.GetRequest, context: grpc.aio.ServicerContext) -> Any:
        service = self.service
        call = self.service.access.call(API_PATH + "Get", write=False)
        user = await service.access.authenticate(context, call)
        resource = await self.resource_type(request.resource, context)
        kind = resource.kind
        namespace = request.namespace or "default"
        # A list across namespaces is a list at the cluster scope, as upstream authorizes it.
        target = Target.of(resource, "" if request.all_namespaces else namespace, request.name)
        await service.access.authorize(context, call, target.attributes(user, "get" if request.name else "list"))
        await self.caught_up(context)
        objects = [
            obj
            for obj in objects_of(service.cluster, kind)
            if (not resource.namespaced or request.all_namespaces or obj.metadata.namespace == namespace)
            and (not request.name or obj.metadata.name == request.name)
        ]
        if request.name and not objects:
            ns = namespace if resource.namespaced else ""
            await context.abort(grpc.StatusCode.NOT_FOUND, ApiError.not_found(kind, request.name, ns).kubectl_message())
        objects.sort(key=lambda o: (o.metadata.namespace, o.metadata.name))
        return api_pb2.GetResponse(objects_json=[to_json(obj) for obj in objects])

    async def Delete(self, request: api_pb2.DeleteRequest, context: grpc.aio.ServicerContext) -> Any:
        found = find_resource_type(request.resource)
        namespace = request.namespace or "default"
        target = (
            Target.of(found, namespace, request.name)
            if found is not None
            else Target(request.resource, namespace=namespace, name=request.name)
        )
        call = self.service.access.call(API_PATH + "Delete", write=not request.dry_run, verb="delete", target=target)
        return await self.service.access.audited(context, call, self._delete(request, context, call))

    async def _delete(self, request: api_pb2.DeleteRequest, context: grpc.aio.ServicerContext, call: ApiCall) -> Any:
        access = self.service.access
        user = await access.authenticate(context, call)
        resource = await self.resource_type(request.resource, context)
        kind = resource.kind
        namespace = (request.namespace or "default") if resource.namespaced else ""
        await access.authorize(context, call, call.target.attributes(user, "delete"))
        grace = request.grace_period_seconds if request.HasField("grace_period_seconds") else None
        if request.dry_run:
            return await self._delete_dry_run(kind, namespace, request.name, grace, call, context)
        delete = binder_pb2.DeleteRequest(kind=kind, namespace=namespace, name=request.name)
        if grace is not None:
            delete.grace_period_seconds = grace
        try:
            deleted = await self.service.binder.Delete(delete, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as error:
            await self.forward_error(context, error)
        self.service.saw(deleted.resource_version, deleted.event_sequence)
        call.resource_version = deleted.resource_version
        call.object_json = deleted.object_json
        return api_pb2.DeleteResponse(object_json=deleted.object_json)

    async def _delete_dry_run(
        self, kind: str, namespace: str, name: str, grace: int | None, call: ApiCall, context: grpc.aio.ServicerContext
    ) -> api_pb2.DeleteResponse:
        """The delete's admission on this replica's copy, as the binder would run it; the object as
        it is, or the call aborted with the refusal's status and kubectl line. Deletes nothing."""
        await self.caught_up(context)
        try:
            admit_delete(self.service.cluster.store, kind, namespace, name, grace)
        except ApiError as error:
            await context.abort(status_code(error), error.kubectl_message())
        stored = stored_object(self.service.cluster, call.target)
        assert stored is not None  # admitted, so stored
        return api_pb2.DeleteResponse(object_json=to_json(stored))

    async def DeleteCollection(
        self, request: api_pb2.DeleteCollectionRequest, context: grpc.aio.ServicerContext
    ) -> Any:
        return await delete_collection(self, request, context)

    async def ListEvents(self, request: api_pb2.ListEventsRequest, context: grpc.aio.ServicerContext) -> Any:
        service = self.service
        access = service.access
        call = self.service.access.call(API_PATH + "ListEvents", write=False)
        user = await access.authenticate(context, call)
        namespace = request.namespace or "default"
        events_here = events_target("" if request.all_namespaces else namespace)
        await access.authorize(context, call, events_here.attributes(user, "list"))
        # Events about cluster-scoped objects (nodes), and one object's events wherever they are, are
        # for callers who may list events at the cluster scope; others see their namespace's only.
        wide = request.all_namespaces or access.decide(events_target("").attributes(user, "list")).allowed
        await self._events_caught_up(context)
        events = [
            event_to_proto(event)
            for event in service.cluster.events
            if (not request.involved_uid or event.involved_object.uid == request.involved_uid)
            and (
                request.all_namespaces
                or (wide and request.involved_uid)
                or event.involved_object.namespace == namespace
                or (wide and event.involved_object.namespace == "")
            )
        ]
        return api_pb2.ListEventsResponse(events=events)

    async def Watch(self, request: api_pb2.WatchRequest, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        service = self.service
        access = service.access
        call = self.service.access.call(API_PATH + "Watch", write=False)
        user = await access.authenticate(context, call)
        kinds = set(request.kinds)
        unknown = kinds - ALL_KINDS
        if unknown:
            message = fit_status_message(f"error: unknown kinds {sorted(unknown)}")
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        # Asked-for kinds must each be watchable; no kinds means every kind the caller may watch there.
        watched: set[str] = set()
        refused = []
        for resource in RESOURCE_TYPES:
            if kinds and resource.kind not in kinds:
                continue
            attributes = Target.of(resource, request.namespace).attributes(user, "watch")
            if access.decide(attributes).allowed:
                watched.add(resource.kind)
            else:
                refused.append(attributes)
        if refused and (kinds or not watched):
            await access.deny(context, call, refused[0])
        if request.include_events:
            await access.authorize(context, call, events_target(request.namespace).attributes(user, "watch"))
        # As ListEvents: cluster-scoped objects and their events pass a namespace filter only for
        # callers who may watch all of it at the cluster scope.
        everywhere = [Target.of(r, "") for r in RESOURCE_TYPES if r.kind in watched]
        if request.include_events:
            everywhere.append(events_target(""))
        wide = not request.namespace or all(access.decide(t.attributes(user, "watch")).allowed for t in everywhere)
        if request.events_only and not request.include_events:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "error: events_only needs include_events")
        since, since_event = request.since_resource_version, request.since_event_sequence
        if since < 0:
            message = f"error: since_resource_version: Invalid value: {since}: must be 0 or more"
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        if request.HasField("since_event_sequence") and since_event < -1:
            message = f"error: since_event_sequence: Invalid value: {since_event}: must be -1 or more"
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)
        await self.caught_up(context)
        # Subscribed before the state is read or the log scanned: every later change reaches the
        # queue; what both deliver is sent once (changes by version, events by sequence and count).
        watcher = service.watch.subscribe()

        def wanted(ref: events_pb2.ObjectReference, *, event: bool = False) -> bool:
            # An event passes the kinds asked for (its involved object's kind), a change the kinds watched.
            return (ref.kind in watched if not event else not kinds or ref.kind in kinds) and (
                not request.namespace or ref.namespace == request.namespace or (wide and ref.namespace == "")
            )

        try:
            sent_version = request.since_resource_version  # live changes must be newer
            sent_events: dict[int, int] = {}  # sequence -> highest count the client has
            since_event = request.since_event_sequence if request.HasField("since_event_sequence") else None
            if request.events_only:
                pass
            elif request.since_resource_version == 0:
                # Read in one go (no await), so the state is exactly the replica's at `bookmark`.
                bookmark = service.replica.version
                state = [
                    service.watch.change_item(ADDED, obj)
                    for kind in sorted(watched)
                    for obj in objects_of(service.cluster, kind)
                ]
                for added in state:
                    if wanted(added.change.object):
                        yield added
                yield api_pb2.WatchEvent(bookmark_resource_version=bookmark)
                sent_version = bookmark
            else:
                changes = ChangesAfter(request.since_resource_version)
                await self._read_history(context, service.replica.objects_topic, changes)
                for change in changes.changes:
                    if wanted(change.object):
                        yield api_pb2.WatchEvent(change=change)
                sent_version = max(sent_version, changes.last_change, changes.highest_mark)
            if request.include_events and since_event is not None:
                events = EventsAfter(since_event)
                await self._read_history(context, service.replica.events_topic, events)
                sent_events = events.counts
                for event in events.events:
                    if wanted(event.involved_object, event=True):
                        yield api_pb2.WatchEvent(event=event)
            while True:
                item = await watcher.next()
                if item is None:
                    if watcher.unresponsive:
                        log.info("closing %s's Watch: it fell %d items behind", user.username, watcher.capacity)
                        await context.abort(UNRESPONSIVE_CODE, watcher.unresponsive_message())
                    return
                if item.HasField("change"):
                    change = item.change
                    if change.resource_version > sent_version:
                        sent_version = change.resource_version
                        if not request.events_only and wanted(change.object):
                            yield item
                elif request.include_events:
                    event = item.event
                    if since_event is not None and (
                        sent_events.get(event.sequence, 0) >= event.count
                        or (event.count == 1 and event.sequence <= since_event)
                    ):
                        continue  # sent from the log, or the client had it before it resumed
                    if wanted(event.involved_object, event=True):
                        yield item
        finally:
            service.watch.unsubscribe(watcher)

    async def _read_history(
        self, context: grpc.aio.ServicerContext, topic: str, history: ChangesAfter | EventsAfter
    ) -> None:
        """Read what the log holds after the resume point; OUT_OF_RANGE when it no longer holds it all."""
        await read_after(self.service.config.kafka_bootstrap_servers, topic, history)
        try:
            history.check()
        except TooOld as error:
            await context.abort(grpc.StatusCode.OUT_OF_RANGE, str(error))


def binder_admits(target: Target) -> bool:
    """Whether a write of this target is left to the binder's admission alone, which decodes,
    validates and admits it against the stored state with the same code and the same refusals
    (status code and kubectl line) whatever this copy holds. Admitting it here as well was a second
    decode and admission of every created object (about 22 us of the queue's CPU per pod). The queue
    admits a write itself only where the binder would not say the same: a body whose kind the API
    does not serve (nothing was authorized for it) and a kind served behind a feature gate, which
    only the queue's scheduler configuration knows."""
    return target.known is not None and target.known.kind not in GATED_KINDS


def admitted_on_copy(cluster: Cluster, obj: ApiObject) -> tuple[str, ApiObject]:
    """`admit_without_storing` on this replica's copy, in an `admission` span when tracing is on
    (with it off, entering and leaving a span that records nothing still cost about 6 us, a
    sixth of admitting a pod)."""
    if not telemetry.tracing_enabled():
        return admit_without_storing(cluster, obj)
    with telemetry.tracer().start_as_current_span("admission") as span:
        span.set_attributes(_object_attributes(obj))
        action, admitted = admit_without_storing(cluster, obj)
        if isinstance(admitted, Pod):
            span.set_attribute("podsched.pod.priority", admitted.spec.priority or 0)
    return action, admitted


def _object_attributes(obj: ApiObject) -> dict[str, Any]:
    if isinstance(obj, Pod):
        return {"k8s.pod.name": obj.name, "k8s.namespace.name": obj.namespace, "podsched.kind": KIND_POD}
    return {"podsched.kind": obj.kind, "podsched.name": obj.metadata.name}


def stored_object(cluster: Cluster, target: Target) -> ApiObject | None:
    """The stored object a request names, if there is one."""
    if target.known is None:
        return None
    kind, key = target.known.kind, (target.namespace, target.name)
    if kind == KIND_POD:
        return cluster.pods.get(key)
    if kind == KIND_PDB:
        return cluster.pdbs.get(key)
    if kind == KIND_NODE:
        return cluster.nodes.get(target.name)
    if kind == KIND_PRIORITY_CLASS:
        return cluster.priority_classes.get(target.name)
    return next((o for o in objects_of(cluster, kind) if (o.metadata.namespace, o.metadata.name) == key), None)


def objects_of(cluster: Cluster, kind: str) -> list[ApiObject]:
    if kind == KIND_POD:
        return list(cluster.pods.values())
    if kind == KIND_NODE:
        return list(cluster.nodes.values())
    if kind == KIND_PRIORITY_CLASS:
        return list(cluster.priority_classes.values())
    if kind == KIND_RESOURCE_QUOTA:
        return list(cluster.resource_quotas.values())  # each with the status.used this copy derives
    if kind in cluster.workloads:
        return list(cluster.workloads[kind].values())
    if kind == KIND_POD_GROUP:
        return list(cluster.pod_groups.values())
    return list(cluster.pdbs.values())

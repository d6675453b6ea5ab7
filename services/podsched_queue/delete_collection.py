"""The public DeleteCollection: `podsched delete pods --all`, `-l app=web`, as the API server's
DeleteCollection does it: list what the namespace and selectors pick, then delete each listed object
as its own Delete would.

The listing reads this replica once it holds every write the service acknowledged (as Get does).
The deletes go to the binder in DeleteMany calls of MAX_DELETES_PER_CALL objects, each one operation
of its write loop and so one Kafka transaction, in turn: a round of 10,000 pods is ten transactions
rather than ten thousand. Audit: the call's own record (verb deletecollection, at the collection's
scope, accepted or refused) and, for each deleted object, the record its own Delete would have
(verb delete, its name and uid), so who deleted a given object stays a question the audit log answers.

A dry run (kubectl --dry-run=server) lists and authorizes as the call would, checks each listed
object's delete on this replica (`predict_listed`) and answers with what would be deleted; nothing
goes to the binder and, as for a dry-run Apply, nothing is audited."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

import grpc
from opentelemetry import trace

from podsched.api.errors import fit_status_message, format_bad_value
from podsched.api.resources import ResourceType, find_resource_type
from podsched.api.selector_syntax import (
    FieldRequirement,
    LabelRequirement,
    parse_field_selector,
    parse_label_selector,
)
from podsched.cluster.delete_collection import (
    ListedDeletion,
    objects_of_kind,
    predict_listed,
    select_collection,
    unsupported_field,
)
from podsched_proto.api.v1 import api_pb2
from podsched_proto.binder.v1 import binder_pb2
from podsched_service.api_audit import new_audit_id

from .access import ApiCall, Target
from .peers import RPC_TIMEOUT

if TYPE_CHECKING:
    from .api import PodSchedServicer

# Objects per DeleteMany: the binder applies and commits them as one operation. A pod's delete is
# about three records (its change, its tombstone, its Deleted event), so a transaction of ~3,000
# records and a few MB, well within what the broker takes.
MAX_DELETES_PER_CALL = 1000
# The gRPC path the audit record names (request_uri).
METHOD_PATH = "/" + api_pb2.DESCRIPTOR.services_by_name["PodSched"].full_name + "/DeleteCollection"


def _bad_request(field: str, value: object, detail: str) -> str:
    shown = format_bad_value(value)
    return fit_status_message(f"Error from server (BadRequest): {field}: Invalid value: {shown}: {detail}")


async def delete_collection(
    servicer: PodSchedServicer, request: api_pb2.DeleteCollectionRequest, context: grpc.aio.ServicerContext
) -> api_pb2.DeleteCollectionResponse:
    """Audited as one write (verb deletecollection) unless a dry run; the work in `_delete_collection`."""
    access = servicer.service.access
    found = find_resource_type(request.resource)
    scope = "" if request.all_namespaces else (request.namespace or "default")
    target = Target.of(found, scope) if found is not None else Target(request.resource, namespace=scope)
    call = access.call(METHOD_PATH, write=not request.dry_run, verb="deletecollection", target=target)
    return await access.audited(context, call, _delete_collection(servicer, request, context, call))


async def _delete_collection(
    servicer: PodSchedServicer,
    request: api_pb2.DeleteCollectionRequest,
    context: grpc.aio.ServicerContext,
    call: ApiCall,
) -> api_pb2.DeleteCollectionResponse:
    service = servicer.service
    access = service.access
    # 1. Who asks, and may they delete this collection (deletecollection at its scope, as upstream).
    user = await access.authenticate(context, call)
    resource = await servicer.resource_type(request.resource, context)
    await access.authorize(context, call, call.target.attributes(user, "deletecollection", named=False))
    # 2. The request itself: refused whole, before anything is listed.
    labels, fields, grace = await _checked(request, resource, context)
    # 3. List on this replica, then delete what was listed.
    await servicer.caught_up(context)
    namespace = None if request.all_namespaces or not resource.namespaced else (request.namespace or "default")
    chosen = select_collection(
        objects_of_kind(service.cluster, resource.kind), namespace, labels, fields, resource.namespaced
    )
    span = trace.get_current_span()
    span.set_attributes({"podsched.kind": resource.kind, "podsched.delete_collection.listed": len(chosen)})
    if request.dry_run:
        span.set_attribute("podsched.dry_run", True)
        # The version of the copy just listed: nothing awaited since, so the prediction reads it too.
        response = api_pb2.DeleteCollectionResponse(resource_version=service.replica.version)
        for predicted in predict_listed(service.cluster, resource.kind, chosen, grace):
            if predicted.deleted:
                response.deleted.append(_predicted(predicted))
            elif predicted.error is not None:
                response.refused.append(predicted.error.kubectl_message())
        span.set_attribute("podsched.delete_collection.deleted", len(response.deleted))
        return response
    response = api_pb2.DeleteCollectionResponse()
    for start in range(0, len(chosen), MAX_DELETES_PER_CALL):
        part = chosen[start : start + MAX_DELETES_PER_CALL]
        delete = binder_pb2.DeleteManyRequest(
            kind=resource.kind,
            objects=[
                binder_pb2.ListedObject(namespace=o.metadata.namespace, name=o.metadata.name, uid=o.metadata.uid)
                for o in part
            ],
        )
        if grace is not None:
            delete.grace_period_seconds = grace
        try:
            reply = await service.binder.DeleteMany(delete, timeout=RPC_TIMEOUT)
        except grpc.aio.AioRpcError as error:
            # What earlier parts deleted stays deleted (as upstream's DeleteCollection, which stops
            # at its first failure); their audit records are still written.
            await _audit_each(servicer, context, call, resource, response.deleted)
            await servicer.forward_error(context, error)
        service.saw(reply.resource_version, reply.event_sequence)
        response.resource_version = reply.resource_version
        for obj, outcome in zip(part, reply.outcomes, strict=True):
            if outcome.deleted:
                response.deleted.append(
                    api_pb2.DeletedObject(
                        namespace=obj.metadata.namespace,
                        name=obj.metadata.name,
                        uid=obj.metadata.uid,
                        resource_version=outcome.resource_version,
                        terminating=outcome.terminating,
                    )
                )
            elif outcome.code != grpc.StatusCode.NOT_FOUND.value[0]:
                response.refused.append(outcome.message)
    span.set_attribute("podsched.delete_collection.deleted", len(response.deleted))
    await _audit_each(servicer, context, call, resource, response.deleted)
    call.resource_version = response.resource_version
    return response


def _predicted(deletion: ListedDeletion) -> api_pb2.DeletedObject:
    """A dry run's answer for one object its delete would delete."""
    listed = deletion.listed
    return api_pb2.DeletedObject(
        namespace=listed.namespace,
        name=listed.name,
        uid=listed.uid,
        resource_version=deletion.resource_version,
        terminating=deletion.terminating,
    )


async def _checked(
    request: api_pb2.DeleteCollectionRequest, resource: ResourceType, context: grpc.aio.ServicerContext
) -> tuple[tuple[LabelRequirement, ...], tuple[FieldRequirement, ...], int | None]:
    """The selectors parsed and the grace period; INVALID_ARGUMENT naming the field otherwise."""
    grace = request.grace_period_seconds if request.HasField("grace_period_seconds") else None
    if grace is not None and grace < 0:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT, _bad_request("grace_period_seconds", grace, "must be >= 0")
        )
    try:
        labels = parse_label_selector(request.label_selector)
    except ValueError as error:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT, _bad_request("label_selector", request.label_selector, str(error))
        )
    try:
        fields = parse_field_selector(request.field_selector)
    except ValueError as error:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT, _bad_request("field_selector", request.field_selector, str(error))
        )
    unknown = unsupported_field(resource.kind, resource.namespaced, fields)
    if unknown is not None:
        await context.abort(
            grpc.StatusCode.INVALID_ARGUMENT,
            _bad_request("field_selector", request.field_selector, f"field label not supported: {unknown}"),
        )
    return labels, fields, grace


async def _audit_each(
    servicer: PodSchedServicer,
    context: grpc.aio.ServicerContext,
    call: ApiCall,
    resource: ResourceType,
    deleted: Any,
) -> None:
    """For each deleted object the record its own Delete would have written, awaited before the
    answer as `ApiAccess.audited` awaits the call's own."""
    access = servicer.service.access
    records = []
    for obj in deleted:
        one = dataclasses.replace(
            call,
            audit_id=new_audit_id(),
            verb="delete",
            target=Target.of(resource, obj.namespace, obj.name),
            uid=obj.uid,
            resource_version=obj.resource_version,
            object_json=b"",
        )
        records.append(access.audit_log.record(access.event(context, one, grpc.StatusCode.OK, "")))
    await asyncio.gather(*records)

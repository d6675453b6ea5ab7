"""Who may use the public API, and the record of every write: authentication, authorization and
the API audit log around each PodSched call.

A call goes through `ApiAccess` in this order, each step refusing as kube-apiserver would:
1. authenticate: a bearer token or a client certificate (podsched_service.authentication), else
   UNAUTHENTICATED with kubectl's `error: You must be logged in to the server (Unauthorized)`;
2. authorize the call's attributes (verb, resource, namespace, name) against the policy
   (podsched_service.authorization), else PERMISSION_DENIED with upstream's Forbidden message;
3. the servicer's own work (admission, the binder's write);
4. for a write (Apply, Delete or DeleteCollection without dry_run), an AuditEvent with the
   outcome, whatever it is: `audited` records it after the answer is known and before the client
   gets it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

import grpc
from opentelemetry import trace

from podsched.api.documents import parse_json
from podsched.api.resources import ResourceType, resource_type_of_kind
from podsched_proto.audit.v1 import audit_pb2
from podsched_service.api_audit import ApiAuditLog, new_audit_id, response_status, source_ips, user_info
from podsched_service.authentication import (
    UNAUTHORIZED_MESSAGE,
    AuthenticationError,
    Authenticator,
    Identity,
    bearer_token,
    load_token_file,
)
from podsched_service.authorization import Attributes, Decision, Policy, forbidden_message, load_policy
from podsched_service.clock import Clock, SystemClock
from podsched_service.codec import set_timestamp
from podsched_service.tls import peer_certificate

from .config import QueueConfig

log = logging.getLogger(__name__)
T = TypeVar("T")

EVENTS_RESOURCE = "events"
# Callers whose audit UserInfo is kept built (a cluster has few; beyond this many the lot is rebuilt).
USER_INFOS_KEPT = 1024
# The response status of an accepted write, by whether it created the object (the event copies it in).
_ACCEPTED = {created: response_status(grpc.StatusCode.OK, "", created=created) for created in (False, True)}


def api_group_of(resource: ResourceType) -> str:
    """`priorityclass.scheduling.k8s.io` -> `scheduling.k8s.io`; core kinds -> ""."""
    return resource.qualified.partition(".")[2]


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """What a request is about, as far as it says: the resource (plural) and its group, the
    namespace ("" at the cluster scope) and the name. `known` is the resource type if the API serves it."""

    resource: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    name: str = ""
    known: ResourceType | None = None

    @staticmethod
    def of(resource: ResourceType, namespace: str, name: str = "") -> Target:
        """`namespace` "" is the cluster scope (a list across namespaces); cluster-scoped kinds drop it."""
        namespace = namespace if resource.namespaced else ""
        return Target(resource.plural, api_group_of(resource), "v1", namespace, name, resource)

    @staticmethod
    def of_document(raw: bytes) -> Target:
        """Best effort for an Apply body, before anything is validated: kind, apiVersion,
        metadata.namespace (a namespaced kind defaults to "default") and metadata.name. An empty
        Target if the body is not a JSON object."""
        try:
            document = parse_json(raw)
        except ValueError:
            return Target()
        return Target.of_parsed(document)

    @staticmethod
    def of_parsed(document: Any) -> Target:
        """`of_document` of a body already parsed (`parse_json`; None if it was not JSON)."""
        if not isinstance(document, dict):
            return Target()
        kind = document.get("kind")
        api_version = document.get("apiVersion")
        raw_metadata = document.get("metadata")
        metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
        name = _string(metadata.get("name"))
        namespace = _string(metadata.get("namespace"))
        group, _, version = api_version.rpartition("/") if isinstance(api_version, str) else ("", "", "")
        known = resource_type_of_kind(kind) if isinstance(kind, str) else None
        if known is not None:
            return Target(
                known.plural, group, version, (namespace or "default") if known.namespaced else "", name, known
            )
        if not isinstance(kind, str) or not kind:
            return Target(api_version=version, namespace=namespace, name=name)
        # A kind the API does not serve: authorized as kube-apiserver would authorize its URL.
        return Target(kind.lower() + "s", group, version, namespace, name)

    def attributes(self, user: Identity, verb: str, *, named: bool = True) -> Attributes:
        return Attributes(user, verb, self.resource, self.api_group, self.namespace, self.name if named else "")


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def events_target(namespace: str) -> Target:
    """Events (core v1) in `namespace`, or at the cluster scope for ""."""
    return Target(EVENTS_RESOURCE, "", "v1", namespace)


@dataclasses.dataclass
class ApiCall:
    """One request on its way through ApiAccess: what it is about and what became of it."""

    method: str
    write: bool
    received: float = 0.0  # set by ApiAccess.call from the service's clock
    audit_id: str = dataclasses.field(default_factory=new_audit_id)
    verb: str = ""
    target: Target = Target()
    user: Identity | None = None
    decision: int = audit_pb2.AuditEvent.DECISION_UNSPECIFIED
    reason: str = ""
    # Set by an accepted write: the binder's answer.
    resource_version: int = 0
    object_json: bytes = b""
    uid: str = ""  # the stored object's, when the binder said it (then object_json need not be parsed)
    created: bool = False


class ApiAccess:
    """Authentication, the authorization policy and the audit log of the public API."""

    def __init__(
        self, authenticator: Authenticator, policy: Policy, audit_log: ApiAuditLog, clock: Clock | None = None
    ) -> None:
        self.authenticator = authenticator
        self.policy = policy
        self.audit_log = audit_log
        self.clock = clock or SystemClock()  # the audit record's request-received and stage timestamps
        self._user_infos: dict[Identity, audit_pb2.UserInfo] = {}
        self._background: set[asyncio.Task[None]] = set()

    @staticmethod
    def from_config(config: QueueConfig, clock: Clock | None = None) -> ApiAccess:
        """Reads the token and policy files now; ValueError names the file and line if one is unusable."""
        tokens = load_token_file(config.token_file) if config.token_file else None
        authenticator = Authenticator(tokens, certificates=bool(config.tls_client_ca_file))
        policy = load_policy(config.authorization_file) if config.authorization_file else Policy.allow_all()
        audit_log = ApiAuditLog(config.kafka_bootstrap_servers, config.topic_prefix, enabled=config.api_audit)
        access = ApiAccess(authenticator, policy, audit_log, clock)
        access.log_settings(config)
        return access

    def log_settings(self, config: QueueConfig) -> None:
        if not self.authenticator.enabled:
            log.warning("authentication is off: every caller of the public API is a cluster admin (system:admin)")
            return
        ways = [
            way
            for way, on in (
                ("bearer tokens", self.authenticator.tokens is not None),
                ("client certificates", self.authenticator.certificates),
            )
            if on
        ]
        log.info("public API authentication: %s", " and ".join(ways))
        if self.authenticator.tokens is not None and not config.tls_cert_file:
            log.warning("bearer tokens are accepted over plaintext: set PODSCHED_TLS_CERT_FILE/KEY_FILE")
        if self.policy.always_allow:
            log.warning("no PODSCHED_AUTHORIZATION_FILE: every authenticated caller may do anything")

    async def start(self) -> None:
        await self.audit_log.start()

    async def stop(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.audit_log.stop()

    # --- the steps -------------------------------------------------------------------------------

    def call(self, method: str, *, write: bool, verb: str = "", target: Target | None = None) -> ApiCall:
        """A request as it arrives, stamped with the service clock's time."""
        return ApiCall(method, write, self.clock.time(), verb=verb, target=target or Target())

    async def authenticate(self, context: grpc.aio.ServicerContext, call: ApiCall) -> Identity:
        """The caller's identity; aborts the call UNAUTHENTICATED (after `audited` records it) if
        its credentials identify no one."""
        try:
            token = bearer_token(context.invocation_metadata() or ())
            certificate = peer_certificate(context.auth_context()) if self.authenticator.certificates else None
            call.user = self.authenticator.authenticate(token, certificate)
        except AuthenticationError as error:
            call.decision = audit_pb2.AuditEvent.FORBID
            call.reason = f"authentication failed: {error}"
            log.info("%s refused: %s (peer %s)", call.method, error, context.peer())
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, UNAUTHORIZED_MESSAGE)
        assert call.user is not None
        return call.user

    def decide(self, attributes: Attributes) -> Decision:
        return self.policy.authorize(attributes)

    async def authorize(self, context: grpc.aio.ServicerContext, call: ApiCall, attributes: Attributes) -> None:
        """Aborts the call PERMISSION_DENIED with upstream's Forbidden line unless the policy allows it."""
        decision = self.decide(attributes)
        call.decision = audit_pb2.AuditEvent.ALLOW if decision.allowed else audit_pb2.AuditEvent.FORBID
        call.reason = decision.reason
        if not decision.allowed:
            await self.deny(context, call, attributes)

    async def deny(self, context: grpc.aio.ServicerContext, call: ApiCall, attributes: Attributes) -> None:
        call.decision = audit_pb2.AuditEvent.FORBID
        call.reason = ""
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, forbidden_message(attributes))

    async def audited(self, context: grpc.aio.ServicerContext, call: ApiCall, work: Awaitable[T]) -> T:
        """Run the call's work; for a write, record its outcome on the audit log before answering."""
        if not call.write:
            return await work
        try:
            result = await work
        except grpc.aio.AbortError:
            await self._record(context, call, context.code() or grpc.StatusCode.UNKNOWN, context.details() or "")
            raise
        except asyncio.CancelledError:
            # The client went away; the write may still have happened: record it without delaying the cancel.
            task = asyncio.get_running_loop().create_task(
                self._record(context, call, grpc.StatusCode.CANCELLED, "the client cancelled the request")
            )
            self._background.add(task)
            task.add_done_callback(self._background.discard)
            raise
        except Exception as error:
            await self._record(context, call, grpc.StatusCode.UNKNOWN, f"Error from server (InternalError): {error}")
            raise
        await self._record(context, call, grpc.StatusCode.OK, "")
        return result

    async def _record(self, context: grpc.aio.ServicerContext, call: ApiCall, code: Any, message: str) -> None:
        await self.audit_log.record(self.event(context, call, code, message))

    def event(
        self, context: grpc.aio.ServicerContext, call: ApiCall, code: grpc.StatusCode, message: str
    ) -> audit_pb2.AuditEvent:
        target = call.target
        span_context = trace.get_current_span().get_span_context()
        agent = next((str(v) for k, v in (context.invocation_metadata() or ()) if k == "user-agent"), "")
        accepted = code == grpc.StatusCode.OK
        event = audit_pb2.AuditEvent(
            audit_id=call.audit_id,
            stage=audit_pb2.AuditEvent.RESPONSE_COMPLETE,
            verb=call.verb,
            source_ips=source_ips(context.peer() or ""),
            decision=call.decision,  # type: ignore[arg-type]
            reason=call.reason,
            trace_id=format(span_context.trace_id, "032x") if span_context.is_valid else "",
            request_uri=call.method,
            user_agent=agent,
            resource_version=call.resource_version if accepted else 0,
        )
        # The parts are written into the event in place: one built apart is copied again into it.
        ref = event.object_ref
        ref.resource = target.resource
        ref.namespace = target.namespace
        ref.name = target.name
        ref.api_group = target.api_group
        ref.api_version = target.api_version
        if call.uid and target.name:
            ref.uid = call.uid
        elif call.object_json:
            metadata = json.loads(call.object_json).get("metadata") or {}
            ref.uid = str(metadata.get("uid", ""))
            ref.name = target.name or str(metadata.get("name", ""))
        event.user.MergeFrom(self._user_info(call.user))
        event.response_status.MergeFrom(_ACCEPTED[call.created] if accepted else response_status(code, message))
        set_timestamp(event.request_received_timestamp, call.received)
        set_timestamp(event.stage_timestamp, self.clock.time())
        return event

    def _user_info(self, identity: Identity | None) -> audit_pb2.UserInfo:
        """The caller's UserInfo, built once per identity (the event copies it in)."""
        if identity is None:
            return user_info(None)
        found = self._user_infos.get(identity)
        if found is None:
            if len(self._user_infos) >= USER_INFOS_KEPT:  # certificates can name any number of users
                self._user_infos.clear()
            found = self._user_infos[identity] = user_info(identity)
        return found

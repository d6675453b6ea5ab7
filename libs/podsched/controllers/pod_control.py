"""What the controllers share: which objects a workload owns, and the pods it creates from its
template (controller.PodControl, with upstream's event reasons and messages)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from podsched.api.codecs.meta import ACCEPTED_TYPES, encode_owner_reference
from podsched.api.errors import ApiError
from podsched.api.manifests import decode_object
from podsched.api.types import (
    POD_FAILED,
    POD_RUNNING,
    POD_SUCCEEDED,
    ApiObject,
    OwnerReference,
    Pod,
    PodTemplate,
)
from podsched.cluster import events as ev

SUCCESSFUL_CREATE = "SuccessfulCreate"
SUCCESSFUL_DELETE = "SuccessfulDelete"
FAILED_CREATE = "FailedCreate"


def controller_ref(owner: ApiObject) -> OwnerReference:
    """The ownerReference a controller puts on what it creates (controller and blockOwnerDeletion)."""
    return OwnerReference(
        ACCEPTED_TYPES[owner.kind][0], owner.kind, owner.metadata.name, owner.metadata.uid, True, True
    )


def owned_by(owner_uid: str, objects: Iterable[Any]) -> list[Any]:
    """The objects whose controller reference names `owner_uid`."""
    owned = []
    for obj in objects:
        ref = obj.metadata.controller_ref()
        if ref is not None and ref.uid == owner_uid:
            owned.append(obj)
    return owned


def is_terminal(pod: Pod) -> bool:
    return pod.status.phase in (POD_SUCCEEDED, POD_FAILED)


def is_active(pod: Pod) -> bool:
    """controller.IsPodActive: not terminal and not being deleted."""
    return not is_terminal(pod) and pod.metadata.deletion_timestamp is None


def is_ready(pod: Pod) -> bool:
    """podsched has no readiness probes: a running pod not being deleted is ready (and available)."""
    return pod.status.phase == POD_RUNNING and pod.metadata.deletion_timestamp is None


def pod_from_template(
    template: PodTemplate,
    owner: ApiObject,
    generate_name: str,
    extra_labels: dict[str, str] | None = None,
    finalizers: tuple[str, ...] = (),
) -> Pod:
    """GetPodFromTemplate: the template's metadata and spec, the owner's namespace, a generated name,
    the owner as controller."""
    metadata: dict[str, Any] = copy.deepcopy(template.manifest.get("metadata") or {})
    metadata.pop("name", None)
    labels = {**(metadata.get("labels") or {}), **(extra_labels or {})}
    metadata.update(
        generateName=generate_name,
        namespace=owner.metadata.namespace,
        ownerReferences=[encode_owner_reference(controller_ref(owner))],
    )
    if labels:
        metadata["labels"] = labels
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    document = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": copy.deepcopy(template.manifest.get("spec") or {}),
    }
    obj = decode_object(document, owned=True)
    assert isinstance(obj, Pod)
    return obj


class PodControl:
    """Creates and deletes a controller's pods through the cluster's own write path (admission,
    Priority included: a template's priorityClassName resolves like a user's pod's), recording
    upstream's events on the owner."""

    def __init__(
        self,
        recorder: ev.EventRecorder,
        create: Callable[[Pod], Pod],
        delete: Callable[[Pod], None],
    ) -> None:
        self.recorder = recorder
        self._create = create
        self._delete = delete

    def create(self, owner: ApiObject, pod: Pod, controller: str) -> Pod | None:
        try:
            created = self._create(pod)
        except ApiError as error:
            self.recorder.record(owner, ev.WARNING, FAILED_CREATE, f"Error creating: {error.message}", controller)
            return None
        self.recorder.record(owner, ev.NORMAL, SUCCESSFUL_CREATE, f"Created pod: {created.name}", controller)
        return created

    def delete(self, owner: ApiObject, pod: Pod, controller: str) -> None:
        self._delete(pod)
        self.recorder.record(owner, ev.NORMAL, SUCCESSFUL_DELETE, f"Deleted pod: {pod.name}", controller)

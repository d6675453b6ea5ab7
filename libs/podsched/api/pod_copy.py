"""Shallow copies of a pod and of its spec and status, field by field: what `dataclasses.replace`
gives with no changes, for the writes that copy a pod to change a few of its fields in place (a
bind, a status update, Priority admission of a create).

`replace` looks up every field and calls the class's `__init__` by keyword on each call: 2.1 us for
a scheduler_perf pod's spec, 1.1 for its status, 1.0 for the pod; a positional copy of every field
0.46, 0.28 and 0.27 us. A copy shares every value with its source (metadata too, as `replace`
does); the caller sets the fields that change on the fresh copy, never on its source."""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter

from podsched.api.types import Pod, PodSpec, PodStatus

_pod_values = attrgetter(*(f.name for f in fields(Pod)))
_spec_values = attrgetter(*(f.name for f in fields(PodSpec)))
_status_values = attrgetter(*(f.name for f in fields(PodStatus)))


def copy_pod(pod: Pod) -> Pod:
    return Pod(*_pod_values(pod))


def copy_spec(spec: PodSpec) -> PodSpec:
    return PodSpec(*_spec_values(spec))


def copy_status(status: PodStatus) -> PodStatus:
    return PodStatus(*_status_values(status))

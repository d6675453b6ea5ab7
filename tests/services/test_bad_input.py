"""Bad input through the public gRPC API: each request gets a clear error with Kubernetes' status
and kubectl's wording, and the cluster does not change at all."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
import yaml

from live_api import Api
from manifest_dicts import COMMON, node, pod
from podsched_proto.api.v1 import api_pb2


def state(api: Api) -> Any:
    everything = {
        kind: sorted(api.stub.Get(api_pb2.GetRequest(resource=kind, all_namespaces=True)).objects_json)
        for kind in ("pods", "nodes", "priorityclasses", "poddisruptionbudgets", "resourcequotas")
    }
    return everything, len(api.events())


def rejected(api: Api, document: Any, raw: bytes | None = None) -> grpc.RpcError:
    payload = raw if raw is not None else json.dumps(document).encode()
    with pytest.raises(grpc.RpcError) as caught:
        api.stub.Apply(api_pb2.ApplyRequest(object_json=payload, source="bad.yaml"), timeout=30)
    return caught.value


BAD_INPUT = [
    (
        "malformed JSON",
        None,
        b'{"apiVersion": "v1", "kind": "Pod", "metadata": {',
        grpc.StatusCode.INVALID_ARGUMENT,
        "error: error parsing bad.yaml",
    ),
    (
        "unknown kind",
        {"apiVersion": "v1", "kind": "Potato", "metadata": {"name": "x"}},
        None,
        grpc.StatusCode.INVALID_ARGUMENT,
        'no matches for kind "Potato" in version "v1"',
    ),
    (
        "a PodGroup while the GenericWorkload gate is off (the default)",
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "trainers"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        },
        None,
        grpc.StatusCode.INVALID_ARGUMENT,
        'no matches for kind "PodGroup" in version "scheduling.k8s.io/v1beta1"',
    ),
    (
        "invalid name",
        pod("Bad_Name", "low-priority", "1"),
        None,
        grpc.StatusCode.INVALID_ARGUMENT,
        'Error from server (Invalid): Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"',
    ),
    (
        "invalid quantity",
        pod("p", "low-priority", "two"),
        None,
        grpc.StatusCode.INVALID_ARGUMENT,
        'spec.containers[0].resources.requests[cpu]: Invalid value: "two"',
    ),
    (
        "unknown priority class",
        pod("p", "no-such-class", "1"),
        None,
        grpc.StatusCode.FAILED_PRECONDITION,
        'Error from server (Forbidden): pods "p" is forbidden: no PriorityClass with name no-such-class was found',
    ),
    (
        "a second globalDefault",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "another-default"},
            "value": 5,
            "globalDefault": True,
        },
        None,
        grpc.StatusCode.FAILED_PRECONDITION,
        "PriorityClass the-default is already marked as default. Only one default can exist",
    ),
    (
        "a quota scope selector without values",
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q"},
            "spec": {
                "hard": {"pods": "2"},
                "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In"}]},
            },
        },
        None,
        grpc.StatusCode.INVALID_ARGUMENT,
        'Error from server (Invalid): ResourceQuota "q" is invalid: spec.scopeSelector.matchExpressions.values: '
        "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
    ),
    (
        "a critical class outside kube-system without a covering quota",
        pod("agent", "system-cluster-critical", "1"),
        None,
        grpc.StatusCode.FAILED_PRECONDITION,
        "Error from server: insufficient quota to match these scopes: "
        "[{PriorityClass In [system-node-critical system-cluster-critical]}]",
    ),
    (
        "a request beyond any quantity's range",
        pod("huge", "low-priority", "1e100"),
        None,
        grpc.StatusCode.INVALID_ARGUMENT,
        'Pod "huge" is invalid',
    ),
]


@pytest.mark.parametrize(("case", "document", "raw", "code", "wording"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_is_refused_with_a_clear_error_and_changes_nothing(
    api: Api, case: str, document: Any, raw: bytes | None, code: grpc.StatusCode, wording: str
) -> None:
    api.apply_text(COMMON.read_text())
    default = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "the-default"},
        "value": 1,
        "globalDefault": True,
    }
    api.apply_text(yaml.safe_dump_all([default, node("n1", cpu="2"), pod("existing", "low-priority", "1")]))
    api.wait(lambda: api.pods()["existing"]["spec"].get("nodeName"), what="existing bound")
    before = state(api)
    error = rejected(api, document, raw)
    assert error.code() == code, error.details()
    assert wording in (error.details() or ""), error.details()
    assert state(api) == before, f"{case} changed the cluster"


def test_an_oversized_request_is_refused_and_changes_nothing(api: Api) -> None:
    before = state(api)
    huge = pod("big", "low-priority", "1")
    huge["metadata"]["annotations"] = {"padding": "x" * (40 * 1024 * 1024)}
    error = rejected(api, huge)
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than max" in (error.details() or "")
    assert state(api) == before

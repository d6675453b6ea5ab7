"""Hypothesis strategies for manifests and pod states, shared by the property tests of decoding,
encoding and the record codecs (tests/unit/test_manifests.py, test_pod_json.py, test_encode_json.py,
test_decode_cache.py, test_recorded_pod_decoding.py): manifests a user could write, then the state
changes the scheduler and binder make."""

from __future__ import annotations

from hypothesis import strategies as st

from podsched.api import quantity
from podsched.api.types import CONDITION_DISRUPTION_TARGET, PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER, PodCondition

MOMENT = st.floats(min_value=0, max_value=4e9, allow_nan=False, allow_infinity=False)  # epoch seconds

LABEL = st.from_regex(r"[a-z]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
MILLI_CPU = st.integers(0, 64_000).map(quantity.format_milli_cpu)
BYTES = st.integers(0, 2**40).map(quantity.format_bytes)


CONTAINERS = st.lists(
    st.fixed_dictionaries(
        {"resources": st.fixed_dictionaries({"requests": st.fixed_dictionaries({"cpu": MILLI_CPU, "memory": BYTES})})},
        optional={"ports": st.lists(st.fixed_dictionaries({"containerPort": st.integers(1, 65535)}), max_size=2)},
    ),
    min_size=1,
    max_size=3,
).map(lambda items: [{"name": f"c{index}", **item} for index, item in enumerate(items)])

POD_DOCS = st.builds(
    lambda name, labels, containers, spec_extra: {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": containers, **spec_extra},
    },
    LABEL,
    st.dictionaries(LABEL, LABEL, max_size=3),
    CONTAINERS,
    st.fixed_dictionaries(
        {},
        optional={
            "priorityClassName": LABEL,
            "priority": st.integers(-(2**31), 2**31 - 1),
            "preemptionPolicy": st.sampled_from([PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER]),
            "terminationGracePeriodSeconds": st.integers(0, 3600),
            "nodeSelector": st.dictionaries(LABEL, LABEL, max_size=2),
            "tolerations": st.lists(
                st.fixed_dictionaries(
                    {
                        "key": LABEL,
                        "operator": st.just("Exists"),
                        "effect": st.sampled_from(["NoSchedule", "NoExecute", ""]),
                    }
                ),
                max_size=2,
            ),
        },
    ),
)

# The conditions the scheduler and binder set on a pod: PodScheduled, and DisruptionTarget on a victim.
POD_CONDITIONS = st.lists(
    st.builds(
        PodCondition,
        st.sampled_from(["PodScheduled", CONDITION_DISRUPTION_TARGET]),
        st.sampled_from(["True", "False"]),
        LABEL,
        st.text(max_size=20),
        st.one_of(st.none(), MOMENT),
    ),
    max_size=2,
)

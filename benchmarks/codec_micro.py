"""What one SchedulingBasic pod costs in the codecs, step by step, in microseconds per call.

    python -m benchmarks.codec_micro [--repeat N] [--rounds R]

Each line is one step a pod goes through on its way from the API to every replica (the pod is
upstream's pod-default template, as `make bench` creates it):

  admit_body      the queue's Apply, and again the binder's Write: the body parsed (`parse_json`) and
                  decoded, defaulted and validated (`decode_object`)
  encode_created  the binder's record of the created pod: the object's JSON (`to_json`)
  encode_bound    the same for the bound pod
  encode_pair     a new pod's created record's JSON, then its bound record's (the bound pod made by
                  `replace`, as the binder binds): what the binder renders per pod
  record_bound    the whole record of a bind: JSON, ObjectChange, serialized (`change_record`)
  decode_created  a replica applying the created pod's record (`decode_change`)
  decode_bound    a replica applying the bound pod's record

Timed with the process's CPU time, the best of `--rounds` (20 rounds of 300 calls by default), so
that other work on the machine changes the figures less than it changes the wall clock. One JSON
line per step on stdout.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import replace

from benchmarks.scheduler_perf import pod_template
from podsched.api.documents import parse_json
from podsched.api.manifests import decode_object
from podsched.api.types import Pod
from podsched.cluster.store import ADDED, MODIFIED, Change
from podsched_service.codec import change_message, change_record, decode_change, to_json


def best_us(step: Callable[[], object], repeat: int, rounds: int) -> float:
    """CPU microseconds per call of `step`, the best of `rounds` runs of `repeat` calls."""
    best = float("inf")
    for _ in range(rounds):
        began = time.process_time()
        for _ in range(repeat):
            step()
        best = min(best, (time.process_time() - began) / repeat)
    return best * 1e6


def steps() -> dict[str, Callable[[], object]]:
    manifest = pod_template("default")("scheduling-basic", "pod-0")
    body = json.dumps(manifest).encode()
    created = decode_object(manifest)
    assert isinstance(created, Pod)
    created.metadata.uid, created.metadata.resource_version = "0d6a1c8e-2c57-4c43-9c8b-5e3f0a1b2c3d", 7
    created.metadata.creation_timestamp = 1_764_000_000.25
    bound = decode_object(parse_json(to_json(created)), owned=True)
    assert isinstance(bound, Pod)
    bound.metadata.uid, bound.metadata.resource_version = created.metadata.uid, 9
    bound.spec.node_name = "scheduler-perf-17"
    created_record = change_message(ADDED, created, "binder", 1_764_000_000.5).SerializeToString()
    bound_record = change_message(MODIFIED, bound, "binder", 1_764_000_000.75).SerializeToString()
    bind = Change(MODIFIED, "Pod", created, bound)
    fresh = itertools.cycle([decode_object(parse_json(body), owned=True) for _ in range(8192)])

    def encode_pair() -> object:
        pod = next(fresh)
        to_json(pod)
        return to_json(replace(pod, spec=replace(pod.spec, node_name="scheduler-perf-17")))

    return {
        "admit_body": lambda: decode_object(parse_json(body), owned=True),
        "encode_created": lambda: to_json(created),
        "encode_bound": lambda: to_json(bound),
        "encode_pair": encode_pair,
        "record_bound": lambda: change_record(bind, "binder", 1_764_000_000.75, 8),
        "decode_created": lambda: decode_change(created_record),
        "decode_bound": lambda: decode_change(bound_record),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=300, help="calls per round")
    parser.add_argument("--rounds", type=int, default=20, help="rounds; the best is reported")
    args = parser.parse_args()
    for name, step in steps().items():
        step()  # warm: caches filled as in a running service
        print(json.dumps({"step": name, "us_per_call": round(best_us(step, args.repeat, args.rounds), 2)}), flush=True)


if __name__ == "__main__":
    main()

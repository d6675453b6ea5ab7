"""Starting a live stack for a test: one way for every fixture."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from podsched_devstack.kafka import DevstackError, KafkaBroker
from podsched_devstack.services import ServiceStack, StackSettings

# A scheduler configuration with the GenericWorkload gate on: PodGroups and gang scheduling.
GENERIC_WORKLOAD_ON = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
featureGates:
  GenericWorkload: true
"""


def running(settings: StackSettings) -> Iterator[ServiceStack]:
    """A fixture body: the stack started (a failed start fails the test with the services' logs, not a
    traceback), then stopped."""
    stack = ServiceStack(settings)
    try:
        stack.start()
    except DevstackError as error:
        stack.stop()
        pytest.fail(str(error), pytrace=False)
    try:
        yield stack
    finally:
        stack.stop()


def running_with_config(kafka: KafkaBroker, tmp_path: Path, config: str, **settings: Any) -> Iterator[ServiceStack]:
    """`running` for a stack on its own topics whose services read `config` (a
    KubeSchedulerConfiguration's text) as their scheduler configuration."""
    config_file = tmp_path / "scheduler-config.yaml"
    config_file.write_text(config)
    return running(
        StackSettings.on_free_ports(
            kafka.bootstrap_servers,
            tmp_path / "services",
            topic_prefix=f"t{uuid.uuid4().hex[:10]}.",
            scheduler_config=str(config_file),
            **settings,
        )
    )

"""The podsched preemption service."""

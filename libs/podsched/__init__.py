"""podsched's scheduling core: Kubernetes pod priority and preemption as a pure library.

Nothing in this package imports asyncio, gRPC, Kafka or telemetry (tests/test_import_boundary.py
enforces it): the same functions run in the services, in the preemption workers, in
`podsched simulate` and in the unit tests.
"""

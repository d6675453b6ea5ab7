"""Local development stack for podsched: real infrastructure (Kafka, ...) installed from package registries.

Kept import-free on purpose: ``python -m podsched_devstack.kafka`` would otherwise import the submodule twice
(runpy warns about a module "found in sys.modules" before it runs as ``__main__``).
Use ``from podsched_devstack.kafka import KafkaBroker, ensure_kafka_installed``.
"""

"""Cluster state and the binder's placement semantics (bind, evict, nominate), shared by the binder
service and `podsched simulate`."""

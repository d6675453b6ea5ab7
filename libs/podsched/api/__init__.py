"""Kubernetes object model: typed objects, quantities, manifests and API errors."""

"""The workload controllers (kube-controller-manager's ReplicaSet, Deployment and Job controllers):
pure reconcilers over the cluster's store, run by `Controllers` wherever the cluster's single writer
runs (the binder's write batches, `podsched simulate`'s loop)."""

"""The scheduling framework: statuses, node state, cycle state, plugin interfaces and the runtime
that runs plugins (upstream pkg/scheduler/framework)."""

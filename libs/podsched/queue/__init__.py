"""The scheduling queue (activeQ, backoffQ, unschedulable pods) and the nominator
(upstream pkg/scheduler/backend/queue)."""

"""One scheduling cycle (upstream schedule_one.go) and the scheduler loop around it."""

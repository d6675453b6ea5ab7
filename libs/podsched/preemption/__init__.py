"""DefaultPreemption's algorithm (upstream framework/preemption + plugins/defaultpreemption):
eligibility -> potential nodes -> dry run (select victims per node) -> pick one node -> prepare."""

"""`podsched simulate`: the algorithm end to end in one process on a simulated clock."""

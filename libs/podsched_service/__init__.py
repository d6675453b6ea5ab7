"""What every podsched service shares: configuration from the environment, Kafka topics and codecs,
the replica that follows the object log, and the gRPC server lifecycle. The scheduling algorithm
itself lives in `podsched` (pure); services are thin hosts over it."""

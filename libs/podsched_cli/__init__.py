"""The `podsched` command line."""

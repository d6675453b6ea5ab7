"""The podsched queue service."""

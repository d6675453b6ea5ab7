"""The podsched filter service."""

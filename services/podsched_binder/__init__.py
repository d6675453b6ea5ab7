"""The podsched binder service."""

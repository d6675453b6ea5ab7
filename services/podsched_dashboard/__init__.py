"""The dashboard: a web UI over the public API (read-only, plus dry-run what-ifs)."""

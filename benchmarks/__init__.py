"""Benchmarks: they measure and print; nothing here asserts speed."""

"""In-tree plugins, one module each (upstream pkg/scheduler/framework/plugins)."""

"""One codec per kind: how a manifest of that kind decodes (defaulting and validation, in upstream's
order) and how the typed object is laid back over its manifest to encode it. `podsched.api.manifests`
dispatches to them by kind and is where callers decode and encode."""

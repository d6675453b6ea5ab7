"""Every API call's audit id is a random version 4 UUID written as `str(uuid.UUID)` writes it, and no
two calls share one."""

from __future__ import annotations

import uuid

from podsched_service.api_audit import new_audit_id


def test_an_audit_id_is_a_random_uuid_in_its_canonical_form() -> None:
    ids = [new_audit_id() for _ in range(2000)]
    for audit_id in ids:
        parsed = uuid.UUID(audit_id)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == audit_id
    assert len(set(ids)) == len(ids)

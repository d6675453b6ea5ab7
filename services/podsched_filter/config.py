"""Configuration of the filter service (environment variables PODSCHED_<FIELD>)."""

from __future__ import annotations

import dataclasses

from podsched_service.config import DEFAULT_FILTER_ADDRESS, CommonConfig


@dataclasses.dataclass(frozen=True, slots=True)
class FilterConfig(CommonConfig):
    # gRPC listen address of the Filter service.
    listen_address: str = DEFAULT_FILTER_ADDRESS

"""The No-Data Algorithm: a challenge-response audit of a judge against a rubric."""

from judgekit.nodata.config import AuditConfig, NoDataConfig, SyntheticConfig
from judgekit.nodata.payload import AuditPayload, SyntheticPayload

__all__ = ["AuditConfig", "AuditPayload", "NoDataConfig", "SyntheticConfig",
           "SyntheticPayload"]

"""The No-Data Algorithm: a challenge-response audit of a judge against a rubric."""

from judgekit.methods.nodata.config import AuditConfig, NoDataConfig, SyntheticConfig
from judgekit.methods.nodata.payload import AuditPayload, SyntheticPayload

__all__ = ["AuditConfig", "AuditPayload", "NoDataConfig", "SyntheticConfig",
           "SyntheticPayload"]

"""Probing a judge: do its verdicts move when nothing that matters changes?"""

from judgekit.probe.config import ProbeConfig
from judgekit.probe.payload import ProbePayload

__all__ = ["ProbeConfig", "ProbePayload"]

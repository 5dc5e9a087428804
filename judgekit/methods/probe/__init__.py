"""Probing a judge: do its verdicts move when nothing that matters changes?"""

from judgekit.methods.probe.config import ProbeConfig
from judgekit.methods.probe.payload import ProbePayload

__all__ = ["ProbeConfig", "ProbePayload"]

"""Test helpers shipped with judgekit: a loopback server that misbehaves like real APIs."""

from judgekit.testing.chaos import FAULTS, ChaosServer

__all__ = ["FAULTS", "ChaosServer"]

"""On-demand importance-sampling evaluation (Chaganty et al. 2017): estimators on arrays."""

from judgekit.methods.ondemand.config import LabelConfig, OnDemandConfig, SimulationConfig
from judgekit.methods.ondemand.estimators import (
    adaptive_sample_size,
    joint_precision,
    joint_precision_variance,
    percentile,
    pool_relative_recall,
    proposals,
    simple_precision,
    simple_recall,
    stratified_boot_means,
    weights_for,
)
from judgekit.methods.ondemand.payload import LabelPayload, SimulationPayload

__all__ = ["LabelConfig", "LabelPayload", "OnDemandConfig", "SimulationConfig",
           "SimulationPayload", "adaptive_sample_size", "joint_precision",
           "joint_precision_variance", "percentile", "pool_relative_recall", "proposals",
           "simple_precision", "simple_recall", "stratified_boot_means", "weights_for"]

"""Pure statistics shared by the methods: intervals, tests and bounds."""

from judgekit.stats.bootstrap import (
    Interval,
    batched_percentile_intervals,
    cluster_bootstrap_interval,
    normal_interval,
    percentile_interval,
    rng_of,
)
from judgekit.stats.proportions import (
    paired_bootstrap_interval,
    rate_with_interval,
    wilson_interval,
)
from judgekit.stats.tests import PairedTest, hoeffding_bound, paired_t_test, replicas_needed

__all__ = ["Interval", "PairedTest", "batched_percentile_intervals",
           "cluster_bootstrap_interval", "hoeffding_bound", "normal_interval",
           "paired_bootstrap_interval", "paired_t_test", "percentile_interval",
           "rate_with_interval", "wilson_interval", "replicas_needed", "rng_of"]

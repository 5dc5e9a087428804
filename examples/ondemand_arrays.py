"""On-demand precision estimates on plain arrays (Chaganty et al. 2017).

Two systems over a universe of 6 instances; each system's outputs are sampled and
labelled once, and the joint estimator reuses every label across both systems.

    python examples/ondemand_arrays.py
"""

import numpy as np

from judgekit.methods.ondemand import joint_precision, simple_precision, weights_for

truth = np.array([1.0, 0, 1, 1, 0, 1])              # which instances are correct
outputs = np.array([[1, 1, 1, 1, 0, 0],             # system A outputs instances 0-3
                    [0, 0, 1, 1, 1, 1]], float)     # system B outputs instances 2-5
dists = [row / row.sum() for row in outputs]        # sample uniformly from each system
rng = np.random.default_rng(0)
samples = [rng.choice(6, 50, p=p) for p in dists]   # 50 labelled draws per system
w = weights_for(dists, [50, 50])
print("true precision     ", [float(truth[o > 0].mean()) for o in outputs])
print("simple estimate    ", [simple_precision(truth[s]) for s in samples])
print("joint estimate     ", joint_precision(dists, samples, truth, w).round(3).tolist())

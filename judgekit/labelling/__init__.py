"""Human labels where they count: the items to label next (judgekit.stats.active),
the labels file beside a run, and the corrected estimates those labels give.

``judgekit label SOURCE`` and the viewer's labelling page both go through
:func:`judgekit.labelling.session.propose` and :func:`~judgekit.labelling.session.estimate`.
"""

from judgekit.labelling.session import (
    Figure,
    Settings,
    Status,
    add_label,
    estimate,
    propose,
    undo,
)

__all__ = ["Figure", "Settings", "Status", "add_label", "estimate", "propose", "undo"]

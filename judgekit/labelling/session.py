"""Propose the next items to label, and record labels (the estimate from the labels so
far is :mod:`judgekit.analysis.label_estimate`'s, re-exported here).

The draws are made in batches; within a batch the predictor and the probabilities are
those fitted on the labels that existed when the batch was drawn, and each draw line
records them, so the estimate never depends on what was labelled later. A batch is only
drawn when every earlier draw is labelled: asking again without labelling returns the
same items (nothing is drawn twice). The estimate uses the draws up to the first one
still unlabelled, so skipping an item cannot bias it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from judgekit.analysis.label_estimate import (
    DESIGNS,
    INTERVALS,
    Figure,
    Settings,
    Status,
    estimate,
    estimate_with,
    recorded,
)
from judgekit.analysis.label_terms import (
    FOR,
    Fit,
    State,
    Terms,
    chosen,
    counted,
    draw_row,
    state_of,
    terms_of,
)
from judgekit.analysis.source import Source, derived, load, present_labels
from judgekit.core.errors import ConfigError, DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.label_error import parse_label_error
from judgekit.recorded import labels as store
from judgekit.recorded.labels import human_value
from judgekit.stats import active

_State = State  # the name benchmarks/active_labels.py builds states with
__all__ = ["DESIGNS", "FOR", "INTERVALS", "Figure", "Fit", "Settings", "Status", "Terms",
           "add_label", "chosen", "counted", "enqueue", "estimate", "next_draws",
           "parse_label_error", "propose", "recorded", "terms_of", "undo"]



def propose(source: Path | Source, batch: int = 10, seed: int = 0, target_width: float = 0.1,
            level: float = 0.95, which: str = "pass_rate", design: str = "planned",
            label_error: float | str | None = None) -> Status:
    """The items to label next: the pending draws if some are unlabelled, else a new
    batch of at most ``batch`` distinct unlabelled items (no more than the design still
    needs; none once the target is met)."""
    if batch < 1:
        raise ConfigError(f"--batch {batch}: give at least 1")
    src = load(source) if isinstance(source, Path) else source

    decided: list[Status] = []

    def decide(labels: store.Labels) -> list[JSONObject]:  # under the file's lock
        st, rows = next_draws(src, state_of(src, which, labels), batch, seed, target_width,
                              level, which, design, label_error)
        decided.append(st)
        return store.stamped(labels, lambda: derived(src).fingerprint, rows)

    if not store.transact(src.labels_path, decide) and decided:
        return decided[0]  # nothing drawn: the figures the decision was made on
    return estimate(src, target_width, level, which, design, label_error, seed)


def next_draws(src: Source, state: State, batch: int, seed: int, target_width: float,
               level: float, which: str, design: str, label_error: float | str | None
               ) -> tuple[Status, list[JSONObject]]:
    """The session's status and the draw lines of its next batch (none while draws are
    pending or once the target is met): what :func:`propose` appends to the labels
    file."""
    st, q, m = estimate_with(src, state, target_width, level, design, label_error, seed)
    if st.pending or st.done:
        return st, []
    labels, pop, ests, y = state
    ids = derived(src).ids
    every = active.estimands_for(pop)  # all estimands logged: any can be read
    b = 1 + max((d.batch for d in labels.draws), default=0)
    t0 = len(labels.draws)
    head: JSONObject = {}
    if not labels.draws:
        head = {"seed": seed, "for": which, "level": level, "target_width": target_width,
                "design": design, "label_error": label_error}
    rng = np.random.default_rng([seed, b])
    known = derived(src)
    undrawn = np.ones(len(ids), bool)
    undrawn[known.locate(d.id for d in labels.draws)[1]] = False
    undrawn[known.locate(present_labels(src))[1]] = False
    want = min(batch, len(ids) - len(y), max(1, st.labels_needed))
    plan = max((f.draws + (f.draws_needed or 0) for f in st.figures), default=0)
    new: list[JSONObject] = []
    fresh: set[str] = set()
    while len(fresh) < want and undrawn.any():
        qu = np.where(undrawn, q, 0.0)
        qu = qu / qu.sum() if qu.sum() > 0 else undrawn / undrawn.sum()
        j = int(rng.choice(len(ids), p=qu))
        new.append({"kind": "draw", "draw": t0 + len(new) + 1, "batch": b, "id": ids[j],
                    "probability": float(qu[j]), "prediction": float(m[j]),
                    "frame": "undrawn", "share": (st.steering or {}).get("uniform_share", 1.0),
                    "plan": plan,
                    "predicted_var": (st.steering or {}).get("predicted_var", {}),
                    **draw_row(every, m, qu, undrawn), **(head if not new and head else {})})
        undrawn[j] = False
        if ids[j] not in y:
            fresh.add(ids[j])
    return st, new


def enqueue(source: Path | Source, ids: list[str]) -> int:
    """Queue items for people (offered before any draw until labelled; their labels do
    not enter the estimates). Unknown ids are one error naming the first; items already
    queued or labelled are skipped. Returns how many were queued."""
    src = load(source) if isinstance(source, Path) else source
    known = derived(src).index
    unknown = [k for k in ids if k not in known]
    if unknown:
        raise DataError(store.unknown_ids(src.name, unknown))
    labels = store.read(src.labels_path)
    done = set(labels.queue) | set(store.values_of(labels, src.shape)) | \
        set(present_labels(src))
    new = list(dict.fromkeys(k for k in ids if k not in done))
    _append(src, [{"kind": "queue", "id": k, "at": store.now()} for k in new])
    return len(new)


def add_label(source: Path | Source, item: str, label: Any, annotator: str) -> None:
    src = load(source) if isinstance(source, Path) else source
    by_id = derived(src).by_id
    if item not in by_id:
        raise ConfigError(store.unknown_ids(src.name, [item]))
    if human_value(label, src.shape) is None:
        allowed = "first/second" if src.shape == "pairwise" else "pass/fail (1/0)"
        raise ConfigError(f"label {label!r}: use {allowed}")
    row: JSONObject = {"kind": "label", "id": item, "label": label,
                       "annotator": annotator or "anonymous", "at": store.now()}
    sha = store.item_sha(by_id[item])
    if sha is not None:
        row["item_sha"] = sha  # the text labelled: a later change of the item is seen
    _append(src, [row])


def _append(src: Source, rows: list[JSONObject]) -> None:
    """Append ``rows`` under the file's lock (the source's fingerprint first, once)."""
    if rows:
        store.transact(src.labels_path, lambda labels: store.stamped(
            labels, lambda: derived(src).fingerprint, rows))


def undo(source: Path | Source, annotator: str) -> str | None:
    """Withdraw the annotator's latest label still standing; the item's id, or None."""
    src = load(source) if isinstance(source, Path) else source
    labels = store.read(src.labels_path)
    who = annotator or "anonymous"
    for row in reversed(labels.history):
        if row.kind == "label" and (row.annotator or "anonymous") == who:
            item = row.id
            if who in labels.by_item.get(item, {}):
                _append(src, [{"kind": "undo", "id": item, "annotator": who,
                               "at": store.now()}])
                return item
    return None



"""What a labelling session's estimates are made of: the state read from the labels
file, people's labels already in the source as a first random sample, each counted
draw's terms (predictable and cross-fitted) and bounds, and the annotators' error rate.
judgekit.labelling.session builds the figures and proposals from them."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from judgekit.analysis.source import Source, derived, present_labels
from judgekit.core import seeds
from judgekit.core.errors import ConfigError, DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.recorded import labels as store
from judgekit.recorded.items import PointwiseItem
from judgekit.recorded.labels import human_value
from judgekit.stats import active
from judgekit.stats.ppi import resolve_label_error

FOR = ("pass_rate", "agreement", "difference", "all")


def chosen(pop: active.Population, which: str) -> list[active.Estimand]:
    if which not in FOR:
        raise ConfigError(f"--for {which!r}: use {', '.join(FOR)}")
    every = active.estimands_for(pop)
    if which == "all":
        return every
    return [e for e in every if e.name.startswith(which)] or every[:1]


class State(NamedTuple):
    labels: store.Labels
    pop: active.Population
    estimands: list[active.Estimand]
    y: dict[str, float]  # labelled item -> the mean of its annotators' labels


def state_of(src: Source, which: str, labels: store.Labels | None = None) -> State:
    """The labels so far: the labels file's (``labels``, read under a lock, or read
    now), over people's labels already in the source (which count as labelled and are
    never proposed)."""
    labels = store.read(src.labels_path) if labels is None else labels
    got = derived(src)
    pop = got.pop
    given = store.values_of(labels, src.shape)
    by_id = got.by_id
    unknown = sorted({k for k in (*given, *(d.id for d in labels.draws))
                      if k not in by_id})
    change = None if labels.source is None else store.source_change(
        src.labels_path, labels, got.fingerprint, by_id)
    if unknown and change is None:
        raise DataError(store.unknown_ids(src.labels_path, unknown))
    gone = [d for d in labels.draws if d.id not in by_id]
    if change is not None and gone:
        raise DataError(f"{change}; {len(gone)} draw(s) name items no longer in it, so the "
                        "draws cannot be weighted: label into a new labels file (--out)")
    stale = store.stale_ids(labels, by_id)
    if change is not None or stale:
        import logging

        logging.getLogger("judgekit.labels").warning(
            "judgekit: %s", change or (
                f"{src.labels_path}: {len(stale)} label(s) were given to a text other than "
                "their item's text now (the source changed since: e.g. row-number ids that "
                f"now name other rows); they do not count, the other "
                f"{len(given) - len(stale)} do: {', '.join(sorted(stale)[:5])}"))
        given = {k: v for k, v in given.items() if k in by_id and k not in stale}
    y = {**present_labels(src), **given}
    return State(labels, pop, chosen(pop, which), y)


def label_error_of(src: Source, labels: store.Labels, setting: float | str | None,
                   level: float) -> tuple[float | None, list[float] | None]:
    """The flip rate the estimate corrects for (and its interval): stated, or estimated
    from the items two annotators labelled, in the source's own annotator columns and
    in the labels file (:func:`judgekit.stats.ppi.resolve_label_error`)."""
    groups = _annotations(src, labels) if setting == "repeats" else []
    got = resolve_label_error(setting, groups, level, f"{src.name} and {src.labels_path.name}")
    return (None, None) if got is None else (got.rate, got.ci)


def _annotations(src: Source, labels: store.Labels) -> list[list[float | None]]:
    """Each item's labels by its annotators: the source's own columns, then the labels
    file's annotators."""
    out: dict[str, list[float | None]] = {}
    for x in src.items:  # (a run's index: each record read once)
        if isinstance(x, PointwiseItem) and len(x.humans) >= 2:
            out[x.id] = [human_value(v, src.shape) for v in x.humans]
    for k, who in labels.by_item.items():
        out.setdefault(k, []).extend(human_value(v, src.shape) for v in who.values())
    return list(out.values())


class Head(NamedTuple):
    """People's labels as first draws (:func:`uniform_first`): how many, the items and
    their draw probabilities, and per estimand the columns of their means and bounds."""

    size: int
    at: np.ndarray
    q: np.ndarray
    cols: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]


def uniform_first(src: Source, state: State, drawn: set[str]
                  ) -> tuple[list[store.Draw], Head | None]:
    """People's labels already in the source, as the first draws of a simple random
    sample (each drawn uniformly from the items not drawn before it, with the flat
    prediction 0.5, so each term is the estimand's value on that item plus what is
    known): they enter every estimate before the drawn ones. The file's labelled items
    are assumed a random sample of its items; items the labels file drew are counted
    there, not twice. Order: a seeded shuffle (judgekit.core.seeds' "labelling.present").
    Returns the rows (id, probability, prediction, frame) and their means and bounds as
    columns (:data:`Head`)."""
    got = derived(src)
    y = state.y
    ids, at = got.locate((k for k in got.present if k not in drawn and k in y), strict=False)
    if not ids:
        return [], None
    by = np.argsort(at, kind="stable")  # in the source's order
    key = tuple(ids[k] for k in by.tolist())
    if got.uniform is not None and got.uniform[0] == key:  # the same labels as before
        return list(got.uniform[1]), got.uniform[2]
    n = len(src.items)
    every = active.estimands_for(state.pop)
    order = seeds.rng("labelling.present", 0).permutation(len(ids))
    drawn_ids = [key[k] for k in order.tolist()]
    at = at[by][order]  # t-th drawn item
    t = np.arange(at.size)
    q = 1.0 / (n - t)  # uniform among the n - t items not drawn before
    # what draw_row gives under the flat prediction 0.5 and uniform draws, over the
    # undrawn items, as arrays (a Python loop over thousands of people's labels took
    # seconds per request): the sum of w / 2, decreased item by item in the same order
    # (the same floating-point steps), and the largest |w| among the items not drawn
    # before t: those never drawn here, or drawn at t or later (the bounds are
    # -+ |w| / 2 / q at it; w's sign changes nothing, the negation being exact)
    never = np.ones(n, bool)
    never[at] = False
    cols = {}
    for e in every:
        w = np.asarray(e.weights, float)
        half = np.subtract.accumulate(np.concatenate([[0.5 * float(w.sum())], 0.5 * w[at]]))
        size = np.abs(w)
        rest = float(size[never].max()) if never.any() else 0.0
        big = np.maximum(np.maximum.accumulate(size[at][::-1])[::-1], rest)
        cols[e.name] = (np.round(e.const + half[:-1], 12), big * (0.0 - 0.5) / q,
                        big * (1.0 - 0.5) / q)
    rows = [store.Draw(id=k, probability=p, prediction=0.5, frame="undrawn")
            for k, p in zip(drawn_ids, q.tolist())]
    head = Head(len(rows), at, q, cols)
    got.uniform = (key, rows, head)
    return list(rows), head


def draw_row(every: list[active.Estimand], m: np.ndarray, q: np.ndarray,
              undrawn: np.ndarray) -> JSONObject:
    """What a draw line records of the predictor and probabilities it was drawn under:
    c + sum over the undrawn items of w m, and the bounds of its own part."""
    means, bounds = {}, {}
    for e in every:
        base, lo, hi = active.frame(e, m, q, undrawn)
        means[e.name] = round(base, 12)
        bounds[e.name] = [lo, hi]
    return {"means": means, "bounds": bounds}


def _columns(rows: list[store.Draw], e: active.Estimand, n: int,
             head: Head | None = None) -> tuple[np.ndarray, ...]:
    """Each counted draw's recorded figures for estimand e, read in one pass: whether it
    was drawn from the undrawn items, its mean and prediction, its term bounds (before
    the labels known at its draw are added), whether it was steered, and its predicted
    variance (nan: none). A line of the previous version (drawn with replacement, no
    bounds) was drawn with at least UNIFORM_SHARE / N of uniform probability, which
    bounds its weight."""
    k = len(rows)
    new, means, pred = np.zeros(k), np.empty(k), np.empty(k)
    lo, hi, block, expected = np.empty(k), np.empty(k), np.zeros(k, int), np.full(k, np.nan)
    reach = float(np.abs(e.weights).max()) * n / active.UNIFORM_SHARE
    name = e.name
    h = 0
    if head is not None:  # people's labels: their columns as made
        h = head.size
        means[:h], lo[:h], hi[:h] = head.cols[name]
        lo[:h] += means[:h]
        hi[:h] += means[:h]
        new[:h], pred[:h] = 1.0, 0.5
    for t in range(h, k):
        d = rows[t]
        m = d.means[name]
        means[t] = m
        pred[t] = d.prediction
        new[t] = d.frame == "undrawn"
        got = d.bounds.get(name)
        lo[t], hi[t] = (m - reach, m + reach) if got is None else (m + got[0], m + got[1])
        block[t] = d.share < 1.0
        pv = d.predicted_var
        if pv and name in pv:
            expected[t] = pv[name]
    return new, means, pred, lo, hi, block, expected


class Fit(NamedTuple):
    rows: list[store.Draw]  # the counted draws (people's labels first)
    idx: np.ndarray  # each row's item index
    yv: np.ndarray  # each row's label value
    q: np.ndarray  # each row's draw probability
    items: np.ndarray  # the labelled items (sorted)
    fold: np.ndarray  # each one's fold
    preds: list[np.ndarray]  # each fold's predictor
    resid: np.ndarray  # each row's cross-fitted residual
    yfull: np.ndarray  # every item's label value (0 where unlabelled)
    model: str = "full"  # the predictor's feature set the cross-fit kept
    head: Head | None = None


def fit_counted(src: Source, state: State, rows: list[store.Draw], seed: int,
                head: Head | None = None) -> Fit:
    """The counted draws ``rows`` (the first ``head.size`` of them people's labels,
    whose items, probabilities, means and bounds are ``head``'s columns) with their
    cross-fitted predictors."""
    got = derived(src)
    h = 0 if head is None else head.size
    rest = [d.id for d in rows[h:]]
    idx = np.concatenate([np.zeros(0, np.int64) if head is None else head.at,
                          got.locate(rest)[1]])
    y = state.y
    yv = np.array([y[d.id] for d in rows], float)
    q = np.concatenate([np.zeros(0) if head is None else head.q,
                        np.array([d.probability for d in rows[h:]], float)])
    yfull = np.zeros(len(src.items))
    yfull[idx] = yv
    items = np.unique(idx)
    if items.size < 2:
        return Fit(rows, idx, yv, q, items, np.zeros(items.size, int), [],
                   np.zeros(idx.size), yfull, head=head)
    yi = yfull[items]  # each item's label value (an item's draws share it)
    fold, preds, model = active.crossfit(state.pop, items, yi, seed)
    fold = np.asarray(fold, int)
    fk = fold[np.searchsorted(items, idx)]  # each row's fold
    m = np.empty(idx.size)
    for kk, p in enumerate(preds):
        m[fk == kk] = p[idx[fk == kk]]
    resid = yv - m
    return Fit(rows, idx, yv, q, items, fold, preds, resid, yfull, model, head)


class Terms(NamedTuple):
    z_seq: np.ndarray  # predictable terms (each batch's predictor fitted on earlier labels)
    low: np.ndarray  # their bounds, fixed before each draw
    high: np.ndarray
    z_cf: np.ndarray  # cross-fitted terms (the fixed-n interval's)
    block: np.ndarray  # 0: a uniform draw, 1: a steered one
    expected: np.ndarray  # each draw's variance as predicted when it was drawn (nan: none)


def terms_of(e: active.Estimand, fit: Fit, n: int) -> Terms:
    """Each counted draw's terms for estimand e: des Raj's ordered terms for draws
    without replacement (the labels of items drawn before are known), the
    with-replacement terms for draw lines of the previous version."""
    new, means, pred, lo, hi, block, expected = _columns(fit.rows, e, n, fit.head)
    w_at = e.weights[fit.idx]  # each draw's item's weight
    first = active.first_draws(fit.idx)
    known = active.known_before(fit.idx, w_at * fit.yfull[fit.idx], True, first)
    z_seq = means + new * known + w_at * (fit.yv - pred) / fit.q
    bnd = np.column_stack([lo, hi]) + (new * known)[:, None]
    if fit.preds:
        k = fit.fold[np.searchsorted(fit.items, fit.idx)]
        base = np.empty(fit.idx.size)
        m_cf = np.empty(fit.idx.size)
        for kk, p in enumerate(fit.preds):
            here = k == kk
            p_at = p[fit.idx]
            rest = float(e.weights @ p) - new * active.known_before(fit.idx, w_at * p_at,
                                                                    True, first)
            base[here] = (e.const + new * known + rest)[here]
            m_cf[here] = p_at[here]
        z_cf = base + w_at * (fit.yv - m_cf) / fit.q
    else:
        z_cf = z_seq
    return Terms(z_seq, bnd[:, 0], bnd[:, 1], z_cf, block, expected)


def counted(src: Source, state: State, seed: int = 0) -> Fit | None:
    """The counted draws (people's labels first, then the labels file's draws up to the
    first one still unlabelled) with their cross-fitted predictors."""
    prefix = []
    for d in state.labels.draws:
        if d.id not in state.y:
            break
        prefix.append(d)
    first, head = uniform_first(src, state, {d.id for d in prefix})
    rows = first + prefix
    return fit_counted(src, state, rows, seed, head) if rows else None

"""Named random streams: every stochastic step draws from a stream declared here, by
name, from the run's seed (and an index where the step repeats: an item, a replica
count, a draw). No other module writes a stream id.

Two layouts:

- ``named``: ``SeedSequence(seed, spawn_key=(id, *index))``. numpy pads the seed's
  words to its pool of four before the spawn key, so these words never equal a legacy
  stream's (at most four words, or six starting with a nonzero name word).
- the legacy layouts the streams had before this module (``[seed, id]``,
  ``[seed, *index]``, ``[seed, *index, id]``): kept where the stream decides which
  calls a committed cassette holds or which figures the papers publish, so those replay
  and reproduce unchanged. Where a legacy stream's words would equal another legacy
  stream's of the same scope (a one-word index equal to a fixed stream's id: item 18 of
  the audit and its decision bootstrap's ``[seed, 18]``), the stream takes the named
  layout instead.

Streams of one scope (what one run can draw from one root seed: a method or
experiment; ``nodata/cell`` is what one synthetic cell draws from its own seed) are
distinct for every seed and index; ``tests/test_seeds.py`` checks it. Streams of different scopes
never meet in one run.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal, NamedTuple

import numpy as np

__all__ = ["STREAMS", "Stream", "derive_seed", "derive_seeds", "from_content", "integer",
           "integers", "rng", "sequence", "words"]

Layout = Literal["named", "id", "index", "index_id", "id_index"]


class Stream(NamedTuple):
    """A declared random stream."""

    name: str
    id: int  # unique across streams
    layout: Layout
    scopes: tuple[str, ...]  # the runs that draw it
    why: str = ""
    at: int | None = None  # index_id: the id's place among the index words (None: last)


STREAMS: dict[str, Stream] = {s.name: s for s in (
    # VB-Score
    Stream("vbscore.rotation", 515, "id", ("vbscore",),
           "the tagger self-check's answer rotation (decides the tagger's calls)"),
    Stream("vbscore.bootstrap", 20251, "index_id", ("vbscore",),
           "per-query percentile bootstrap, one count matrix per replica count"),
    Stream("data.sample", 30001, "index", ("vbscore",),
           "a dataset's n queries, keyed by its name (decides the calls)"),
    # No-Data audit
    Stream("nodata.challenge", 30002, "index", ("nodata/llm",),
           "each item's challenge rounds (decide the calls)"),
    Stream("nodata.decision", 18, "named", ("nodata/llm",),
           "the trust decision's bootstrap (named: [seed, 18] was item 18's challenges)"),
    # No-Data synthetic study
    Stream("nodata.protocol", 30003, "index", ("nodata/cell",),
           "each item's EV protocol rounds (Tables 2 and 6)"),
    Stream("nodata.flips", 7, "index_id", ("nodata/cell",),
           "label flips at failure rate phi (binary)"),
    Stream("nodata.flips_k", 11, "index_id", ("nodata/cell",),
           "label flips at failure rate phi (k labels)"),
    Stream("nodata.bitstrings", 30004, "index", ("nodata/synthetic",),
           "regenerated bitstring data, keyed by the phenomenon and split"),
    # probe
    Stream("probe.pairs", 404, "id", ("probe",), "the pairs sampled across datasets"),
    Stream("probe.sequential", 516, "named", ("probe",),
           "the order a sequential probe asks its units in"),
    # on-demand
    Stream("ondemand.population", 1, "id", ("ondemand/simulation",),
           "the simulated population"),
    Stream("ondemand.simple", 2, "id", ("ondemand/simulation",),
           "the simple estimator's repeats"),
    Stream("ondemand.joint", 3, "id", ("ondemand/simulation",),
           "the joint estimator's repeats"),
    Stream("ondemand.draw", 30005, "index", ("ondemand/simulation", "ondemand/label"),
           "each sampling call, keyed by the draw count and the system's name"),
    Stream("nodata.evaluator_run", 30006, "index", ("nodata/synthetic",),
           "one evaluator's protocol seed on one phenomenon (Tables 2 and 6)"),
    Stream("nodata.escape", 99, "id_index", ("nodata/synthetic",),
           "each evaluator's escape-round protocol (the ablation's pass rates)"),
    # VB-Score's calls and intervals
    Stream("vbscore.interpretation_seed", 1, "index_id", ("vbscore",),
           "the provider seed of each query's interpretation call, per replica"),
    Stream("vbscore.system_seed", 2, "index_id", ("vbscore",),
           "the provider seed of each query's system call, per replica"),
    Stream("vbscore.tagger_rotation", 3, "index_id", ("vbscore",),
           "the order a tagger call shows each replica's answers in"),
    Stream("vbscore.tag_sample", 616, "id_index", ("vbscore",),
           "which tagger self-check calls a capped run makes, per chunk (none: chunk 0)"),
    Stream("vbscore.query_interval", 31, "index_id", ("vbscore",),
           "the per-query bootstrap of a dataset's first chunk", at=1),
    Stream("vbscore.query_interval_chunk", 519, "named", ("vbscore",),
           "the per-query bootstrap of a later chunk (named: [seed, d, 31, 1] was query "
           "d's replica-31 system seed)"),
    Stream("vbscore.accuracy", 77, "id", ("vbscore",), "the accuracy's cluster bootstrap"),
    Stream("probe.draw", 30007, "index", ("probe",),
           "the provider seed of each verdict draw (decides the calls)"),
    # probe analysis
    Stream("probe.agreement", 9, "id", ("probe",), "the judge-human agreement's bootstrap"),
    Stream("probe.human_sample", 10, "id", ("probe",),
           "which pairs people label when the probe samples them"),
    Stream("probe.ceiling", 11, "id", ("probe",), "the human ceiling's bootstrap"),
    # recorded verdicts
    Stream("verdicts.agreement", 41, "id", ("verdicts",),
           "the judge-human agreement intervals' bootstrap"),
    Stream("verdicts.beyond_chance", 47, "id", ("verdicts",),
           "the beyond-chance permutation test"),
    Stream("verdicts.human_ceiling", 53, "id", ("verdicts",),
           "the annotators' Fleiss kappa bootstrap"),
    Stream("verdicts.position", 61, "id", ("verdicts",),
           "the sign flips of the first-position preference's interval"),
    Stream("verdicts.order_agreement", 43, "id", ("verdicts",),
           "the agreement of the two orders' verdicts"),
    Stream("verdicts.win_rate", 59, "id_index", ("verdicts",),
           "one model's pairwise win-rate bootstrap, keyed by its index"),
    Stream("verdicts.graded", 62, "named", ("verdicts",),
           "graded verdicts' cluster bootstraps (correlations, kappa, bias, ceiling)"),
    Stream("verdicts.recorded_win_rate", 51, "id_index", ("verdicts",),
           "one model's win rate from recorded preferences, keyed by its index"),
    # choosing a judge
    Stream("choose.cascade", 518, "named", ("choose",),
           "the cascade's split of the labelled items: learn its path, then test it"),
    # labelling
    Stream("labelling.folds", 7, "id", ("labelling",),
           "the cross-fitting folds of the labelling predictor"),
    Stream("labelling.present", 517, "named", ("labelling",),
           "the order people's labels already in a file enter the estimate"),
    # simulated judges (judgekit.testing: tests and benchmarks)
    Stream("testing.judges", 1818, "id", ("testing",), "simulated judge and verifier"),
    Stream("testing.fixed", 77, "index_id", ("testing",),
           "a simulated reader's fixed misreads of one text"),
    Stream("testing.pairs", 405, "named", ("testing",),
           "simulated pairwise verdicts (named: [seed, 404] was probe.pairs')"),
)}


def _reserved(stream: Stream) -> set[int]:
    """Ids of the fixed legacy streams ([seed, id]) sharing a scope with ``stream``."""
    return {s.id for s in STREAMS.values() if s.layout in ("id", "id_index")
            and s is not stream and set(s.scopes) & set(stream.scopes)}


def _get(stream: str | Stream) -> Stream:
    if isinstance(stream, Stream):
        return stream
    try:
        return STREAMS[stream]
    except KeyError:
        near = difflib.get_close_matches(stream, STREAMS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise KeyError(f"random stream {stream!r} is not declared in judgekit.core.seeds"
                       + hint) from None


def sequence(stream: str | Stream, seed: int, *index: int) -> np.random.SeedSequence:
    """The SeedSequence of ``stream`` for ``seed`` (and ``index``)."""
    s = _get(stream)
    idx = [int(i) for i in index]
    if s.layout == "id" and not idx:
        return np.random.SeedSequence([int(seed), s.id])
    if s.layout == "index" and idx and not (len(idx) == 1 and idx[0] in _reserved(s)):
        return np.random.SeedSequence([int(seed), *idx])
    legacy = _legacy(s, idx)
    if legacy is not None:
        return np.random.SeedSequence([int(seed), *legacy])
    return np.random.SeedSequence(int(seed), spawn_key=(s.id, *idx))


def _legacy(s: Stream, idx: list[int]) -> list[int] | None:
    """The words after the seed of a legacy layout (None: the named layout)."""
    if s.layout == "index_id" and idx:
        at = len(idx) if s.at is None else min(s.at, len(idx))
        return [*idx[:at], s.id, *idx[at:]]
    if s.layout == "id_index":
        return [s.id, *idx]
    return None


def rng(stream: str | Stream, seed: int, *index: int) -> np.random.Generator:
    """A Generator drawing from ``stream`` for ``seed`` (and ``index``)."""
    return np.random.default_rng(sequence(stream, seed, *index))


def integer(stream: str | Stream, seed: int, *index: int) -> int:
    """A seed in [0, 2**31) drawn from ``stream`` (a provider's ``seed``, or a seed
    handed to a function that makes its own Generator)."""
    s = _get(stream)
    idx = [int(i) for i in index]
    legacy = _legacy(s, idx)
    if legacy is not None or (s.layout == "id" and not idx):
        return derive_seed(int(seed), *(legacy if legacy is not None else [s.id]))
    return int(sequence(s, seed, *idx).generate_state(1)[0] % (2**31))


def integers(stream: str | Stream, seed: int, indices: Sequence[Sequence[int]]
             ) -> list[int]:
    """``[integer(stream, seed, *i) for i in indices]``, vectorised for legacy layouts."""
    s = _get(stream)
    rows = [_legacy(s, [int(v) for v in i]) for i in indices]
    if all(r is not None for r in rows):
        return derive_seeds([[int(seed), *r] for r in rows if r is not None])
    return [integer(s, seed, *i) for i in indices]


def from_content(data: bytes, byteorder: Literal["big", "little"] = "big") -> int:
    """A 64-bit seed from content (the first 8 bytes of its sha256): the same text, the
    same draws, with no stream to declare (a scripted judge's answer to a prompt)."""
    return int.from_bytes(hashlib.sha256(data).digest()[:8], byteorder)


def words(stream: str | Stream, seed: int, *index: int) -> tuple[int, ...]:
    """The first four words of the stream's state (what two streams are compared by)."""
    return tuple(int(w) for w in sequence(stream, seed, *index).generate_state(4))


@lru_cache(maxsize=1 << 16)
def derive_seed(*parts: int) -> int:
    """A seed in [0, 2**31) derived from integer parts (a run's seed, an item, a draw...):
    distinct parts give independent streams, and it fits every provider's ``seed``.
    Memoised: a method may ask for a seed twice (for the call, then for its record);
    many at once are cheaper through :func:`derive_seeds`."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] % (2**31))


# numpy's SeedSequence constants (numpy/random/bit_generator.pyx; pool of 4 words)
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _M32 = 0xCA01F9DD, 0x4973F715, 0xFFFFFFFF


def derive_seeds(rows: Sequence[Sequence[int]]) -> list[int]:
    """``[derive_seed(*r) for r in rows]`` for many rows of equal length at once: numpy's
    SeedSequence hashing (entropy mixed into a 4-word pool, then the first output word)
    done on arrays, 80,000 seeds in milliseconds rather than 0.4 s. Rows with a part
    outside [0, 2**32) (several entropy words) take ``derive_seed`` itself."""
    if not rows:
        return []
    a = np.asarray(rows, dtype=object)
    if a.ndim != 2 or a.shape[1] == 0 or not all(
            type(v) is int and 0 <= v <= _M32 for v in a.flat):
        return [derive_seed(*r) for r in rows]
    words = a.astype(np.uint64).astype(np.uint32)
    k = words.shape[1]
    const = [_INIT_A]  # the entropy mixer's running multiplier

    def hashmix(v: np.ndarray, state: list[int] = const, mult: int = _MULT_A) -> np.ndarray:
        v = v ^ np.uint32(state[0])
        state[0] = (state[0] * mult) & _M32
        v = v * np.uint32(state[0])
        return v ^ (v >> np.uint32(16))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r: np.ndarray = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y  # wraps mod 2**32
        return r ^ (r >> np.uint32(16))

    zero = np.zeros(words.shape[0], np.uint32)
    pool = [hashmix(words[:, i] if i < k else zero) for i in range(4)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(4, k):
        for dst in range(4):
            pool[dst] = mix(pool[dst], hashmix(words[:, src]))
    v = hashmix(pool[0], [_INIT_B], _MULT_B)  # generate_state's first word
    return (v % np.uint32(2**31)).astype(np.int64).tolist()

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

Streams of one scope (what one run can draw: a method or experiment) are distinct for
every seed and index; ``tests/test_seeds.py`` checks it. Streams of different scopes
never meet in one run.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

__all__ = ["STREAMS", "Stream", "rng", "sequence", "words"]

Layout = Literal["named", "id", "index", "index_id"]


class Stream(NamedTuple):
    """A declared random stream."""

    name: str
    id: int  # unique across streams
    layout: Layout
    scopes: tuple[str, ...]  # the runs that draw it
    why: str = ""


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
    Stream("nodata.protocol", 30003, "index", ("nodata/synthetic",),
           "each item's EV protocol rounds (Tables 2 and 6)"),
    Stream("nodata.flips", 7, "index_id", ("nodata/synthetic",),
           "label flips at failure rate phi (binary)"),
    Stream("nodata.flips_k", 11, "index_id", ("nodata/synthetic",),
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
    # choosing a judge
    Stream("choose.cascade", 518, "named", ("choose",),
           "the cascade's split of the labelled items: learn its path, then test it"),
    # labelling
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
    """Ids of the fixed legacy streams sharing a scope with ``stream``."""
    return {s.id for s in STREAMS.values() if s.layout == "id" and s is not stream
            and set(s.scopes) & set(stream.scopes)}


def _get(stream: str | Stream) -> Stream:
    if isinstance(stream, Stream):
        return stream
    try:
        return STREAMS[stream]
    except KeyError:
        raise KeyError(f"random stream {stream!r} is not declared in judgekit.core.seeds"
                       ) from None


def sequence(stream: str | Stream, seed: int, *index: int) -> np.random.SeedSequence:
    """The SeedSequence of ``stream`` for ``seed`` (and ``index``)."""
    s = _get(stream)
    idx = [int(i) for i in index]
    if s.layout == "id" and not idx:
        return np.random.SeedSequence([int(seed), s.id])
    if s.layout == "index" and idx and not (len(idx) == 1 and idx[0] in _reserved(s)):
        return np.random.SeedSequence([int(seed), *idx])
    if s.layout == "index_id" and idx:
        return np.random.SeedSequence([int(seed), *idx, s.id])
    return np.random.SeedSequence(int(seed), spawn_key=(s.id, *idx))


def rng(stream: str | Stream, seed: int, *index: int) -> np.random.Generator:
    """A Generator drawing from ``stream`` for ``seed`` (and ``index``)."""
    return np.random.default_rng(sequence(stream, seed, *index))


def words(stream: str | Stream, seed: int, *index: int) -> tuple[int, ...]:
    """The first four words of the stream's state (what two streams are compared by)."""
    return tuple(int(w) for w in sequence(stream, seed, *index).generate_state(4))

"""Named random streams (judgekit.core.seeds): every stream declared once, distinct
within what one run draws, for any seed and index; no stream id written elsewhere."""

from __future__ import annotations

import ast
import zlib
from pathlib import Path

import numpy as np
import pytest

from judgekit.core import seeds

ROOT = Path(__file__).resolve().parent.parent

# indices each stream is drawn with (ranges cover every fixed id of every scope)
INDEX = {"index": [(i,) for i in range(0, 1100)] + [(20251,), (30001,), (1818,)],
         "index_id": [(b,) for b in range(0, 600)],
         "id_index": [(k,) for k in range(0, 600)],  # [seed, id, 0] is [seed, id]
         "id": [()], "named": [()]}
BITSTRING_KEYS = [(zlib.crc32((p + s).encode()),) for p in ("IP", "OOP")
                  for s in ("train", "test")]
NAME_KEYS = [(d, int.from_bytes(n.encode()[:16].ljust(16, b"\0"), "little"))
             for d in range(30) for n in ("a", "sys-1", "gpt-4o", "Z" * 20)]
REPLICAS = [(q, b) for q in range(0, 60) for b in range(0, 60)]  # (query, replica)
DOMAIN = {"nodata.bitstrings": BITSTRING_KEYS, "ondemand.draw": NAME_KEYS,
          # (phenomenon, evaluator): the synthetic study's evaluators are at most five
          "nodata.evaluator_run": [(p, e) for p in range(0, 40) for e in range(0, 5)],
          "nodata.escape": [(e,) for e in range(0, 5)],
          "vbscore.interpretation_seed": REPLICAS, "vbscore.system_seed": REPLICAS,
          "vbscore.tagger_rotation": REPLICAS,
          "vbscore.tag_sample": [()] + [(c,) for c in range(1, 200)],
          "vbscore.query_interval": [(d,) for d in range(0, 60)],
          "vbscore.query_interval_chunk": [(d, c) for d in range(0, 60) for c in range(1, 20)],
          "probe.draw": [(d,) for d in range(0, 41)]}




@pytest.mark.parametrize("seed", [0, 1, 18, 404, 515, 12345, 2**31 - 1, 2**40 + 3])
def test_streams_of_one_scope_are_distinct_for_any_seed(seed):
    scopes = {sc for s in seeds.STREAMS.values() for sc in s.scopes}
    for scope in scopes:
        seen: dict[tuple[int, ...], tuple[str, tuple[int, ...]]] = {}
        for s in seeds.STREAMS.values():
            if scope not in s.scopes:
                continue
            for idx in DOMAIN.get(s.name, INDEX[s.layout]):
                w = seeds.words(s, seed, *idx)
                other = seen.setdefault(w, (s.name, idx))
                assert other == (s.name, idx), f"{scope}: {s.name}{idx} = {other}"
    # a named stream with an index differs from every legacy layout too
    named = {seeds.words("nodata.decision", seed, i) for i in range(50)}
    legacy = {seeds.words("nodata.challenge", seed, i) for i in range(50)}
    assert not named & legacy


def test_the_audit_collision_is_removed():
    """Item 18's challenge stream was the decision bootstrap's ([seed, 18])."""
    for seed in (0, 7, 42):
        assert seeds.words("nodata.challenge", seed, 18) != seeds.words("nodata.decision", seed)
        # the challenge keeps its legacy words (the committed cassette's calls)
        legacy = tuple(np.random.SeedSequence([seed, 18]).generate_state(4))
        assert seeds.words("nodata.challenge", seed, 18) == legacy
    # a one-word index equal to a fixed stream's id of the same scope moves to the
    # named layout: a dataset whose name's code points sum to 515 (the rotation's id)
    assert seeds.words("data.sample", 3, 515) != seeds.words("vbscore.rotation", 3)
    assert seeds.words("data.sample", 3, 516) == tuple(
        np.random.SeedSequence([3, 516]).generate_state(4))


def test_ids_are_unique_within_a_scope_and_lookup_is_by_name():
    scopes = {sc for s in seeds.STREAMS.values() for sc in s.scopes}
    for scope in scopes:
        ids = [s.id for s in seeds.STREAMS.values() if scope in s.scopes]
        assert len(ids) == len(set(ids)), scope
    named = [s.id for s in seeds.STREAMS.values() if s.layout == "named"]
    assert len(named) == len(set(named))
    assert all(k == s.name for k, s in seeds.STREAMS.items())
    with pytest.raises(KeyError, match="not declared"):
        seeds.rng("nope", 0)
    with pytest.raises(KeyError, match="did you mean 'probe.pairs'"):
        seeds.rng("probe.pair", 0)


def test_integer_seeds_keep_the_legacy_words():
    """A legacy stream's integer seed is the one the literal words gave (cassettes and
    published figures replay), and the vectorised form equals the scalar one."""
    from judgekit.core.seeds import derive_seed

    assert seeds.integer("verdicts.position", 7) == derive_seed(7, 61)
    assert seeds.integer("verdicts.win_rate", 7, 3) == derive_seed(7, 59, 3)
    assert seeds.integer("vbscore.system_seed", 5, 4, 2) == derive_seed(5, 4, 2, 2)
    assert seeds.integer("vbscore.query_interval", 5, 1) == derive_seed(5, 1, 31)
    assert seeds.integer("vbscore.tag_sample", 5) == derive_seed(5, 616)
    assert seeds.integer("nodata.evaluator_run", 3, 1, 2) == derive_seed(3, 1, 2)
    keys = [(q, b) for q in range(4) for b in range(3)]
    assert seeds.integers("vbscore.interpretation_seed", 9, keys) == [
        seeds.integer("vbscore.interpretation_seed", 9, *k) for k in keys]
    assert seeds.integers("vbscore.query_interval_chunk", 9, [(1, 2)]) == [
        seeds.integer("vbscore.query_interval_chunk", 9, 1, 2)]
    assert 0 <= seeds.integer("probe.sequential", 2**40) < 2**31
    assert seeds.from_content(b"x") == int.from_bytes(
        __import__("hashlib").sha256(b"x").digest()[:8], "big")
    a = seeds.rng("probe.pairs", 5).random(3)
    b = seeds.rng("probe.pairs", 5).random(3)
    assert np.array_equal(a, b)
    assert seeds.words("probe.pairs", 5) == tuple(
        np.random.SeedSequence([5, 404]).generate_state(4))


SEEDERS = {"derive_seed", "derive_seeds", "SeedSequence", "default_rng", "RandomState",
           "Random"}


def literal_seeds(source: str) -> list[int]:
    """Lines of calls to a seeder carrying an integer literal anywhere in their arguments
    (the AST: any spelling, any line breaks)."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        if name not in SEEDERS:
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        if any(isinstance(c, ast.Constant) and type(c.value) is int
               for a in args for c in ast.walk(a)):
            hits.append(node.lineno)
    return hits


def test_the_literal_guard_finds_every_spelling():
    assert literal_seeds("derive_seed(cfg.seed, 61)") == [1]
    assert literal_seeds("x = np.random.default_rng(\n  np.random.SeedSequence(\n"
                         "[cfg.seed,\n 616]))") == [1, 2]
    assert literal_seeds("random.Random(int.from_bytes(d[:8], 'big'))") == [1]
    assert literal_seeds("rng = np.random.default_rng([seed, k])") == []
    assert literal_seeds("seeds.integer('verdicts.position', cfg.seed)") == []


def test_no_literal_stream_id_outside_the_seeds_module():
    hits = [f"{p.relative_to(ROOT)}:{ln}" for p in sorted((ROOT / "judgekit").rglob("*.py"))
            if p.relative_to(ROOT).as_posix() != "judgekit/core/seeds.py"
            for ln in literal_seeds(p.read_text(encoding="utf-8"))]
    assert hits == []

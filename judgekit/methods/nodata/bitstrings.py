"""Experiment 1 of the No-Data paper: 12-bit strings, rule rubrics, scripted judges."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

from judgekit.core import seeds
from judgekit.core.errors import DataError
from judgekit.core.textio import json_loads, read_text
from judgekit.data.registry import dataset, get
from judgekit.judging.rubric import RuleRubric

N_BITS = 12


def ip_rubric() -> RuleRubric:
    """In-phenomenon: c0 even number of ones; c1 = (starts with 0) XOR (has 10101);
    c2 more than five ones; sigma = majority vote."""
    def a(s: str) -> bool:
        return s[0] == "0"

    def b(s: str) -> bool:
        return "10101" in s

    return RuleRubric(
        "IP",
        {"c0": lambda s: s.count("1") % 2 == 0, "c1": lambda s: a(s) != b(s),
         "c2": lambda s: s.count("1") > 5},
        clauses={"c1": ("xor", [("c1a", a), ("c1b", b)])},
        aggregator="majority",
    )


def oop_rubric() -> RuleRubric:
    """Out-of-phenomenon: c0 has 111; c1 ends with 1; c2 has 110001; majority vote."""
    return RuleRubric("OOP", {"c0": lambda s: "111" in s, "c1": lambda s: s.endswith("1"),
                              "c2": lambda s: "110001" in s}, aggregator="majority")


def random_strings(rng: np.random.Generator, n: int) -> list[str]:
    bits = rng.integers(0, 2, size=(n, N_BITS))
    return ["".join("1" if v else "0" for v in row) for row in bits]


def generate_balanced(rubric: RuleRubric, n: int, rng: np.random.Generator
                      ) -> list[tuple[str, int]]:
    """n strings, half labelled 1 and half 0 by the rubric, in random order."""
    want = {0: n // 2, 1: n - n // 2}
    out: list[tuple[str, int]] = []
    while any(want.values()):
        for s in random_strings(rng, 4096):
            y = rubric.label(s)
            if want[y]:
                want[y] -= 1
                out.append((s, y))
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def load_authors_file(path: Path) -> list[tuple[str, int]]:
    """The authors' format: [[bits, "0"|"1"], ...]."""
    if not path.exists():
        raise DataError(f"{path}: file not found (set data_dir to the folder holding it)")
    try:
        doc = json_loads(read_text(path))
        return [(str(s), int(y)) for s, y in doc]
    except (ValueError, TypeError) as exc:
        raise DataError(f"{path}: expected [[bits, label], ...]: {exc}") from exc


_ND = "https://raw.githubusercontent.com/adewynter/no_data_algorithm/main/"
for _p, _ph in (("good", "IP"), ("other", "OOP")):
    for _s in ("train", "test"):
        dataset(f"nodata_{_p}_{_s}", formats=("json",), kind="bitstrings",
                licence="MIT", url=f"{_ND}{_p}_data_{_s}_with_xor.json",
                filename=f"{_p}_data_{_s}_with_xor.json", group="nodata_bitstrings",
                description=f"the authors' {_ph} bit strings, {_s} split "
                            "(No-Data Table 2)")(load_authors_file)


def load_split(data_dir: Path | None, phenomenon: str, split: str, seed: int
               ) -> tuple[list[tuple[str, int]], str]:
    """Authors' files when data_dir is given, else regenerated balanced data."""
    prefix = "good" if phenomenon == "IP" else "other"
    if data_dir is not None:
        p = Path(data_dir) / str(get(f"nodata_{prefix}_{split}").filename)
        return load_authors_file(p), str(p)
    rubric = ip_rubric() if phenomenon == "IP" else oop_rubric()
    n = 2000 if split == "train" else 498
    # a stable key: str hash() is salted per process and would change the data each run
    key = zlib.crc32((prefix + split).encode())
    rng = seeds.rng("nodata.bitstrings", seed, key)
    return generate_balanced(rubric, n, rng), "regenerated"


def features(strings: list[str], kind: str) -> np.ndarray:
    """'bits': the 12 bits; 'decimal': the authors' quirk, the string read as one
    decimal integer (e.g. "0101" -> 101)."""
    if kind == "bits":
        return np.array([[int(c) for c in s] for s in strings], dtype=np.int8)
    if kind == "decimal":
        return np.array([[int(s)] for s in strings], dtype=np.int64)
    raise DataError(f"unknown feature kind {kind!r}: use bits or decimal")


class TreeEvaluator:
    """A decision tree trained on the IP split; its generator knows only the IP
    rubric and rejection-samples x' until C̄_IP(x') = C̄_IP(x)."""

    def __init__(self, train: list[tuple[str, int]], feature_kind: str = "decimal",
                 random_state: int = 123, name: str | None = None) -> None:
        from sklearn.tree import DecisionTreeClassifier

        self.name = name or f"dt_{feature_kind}"
        self.kind = feature_kind
        self.tree = DecisionTreeClassifier(random_state=random_state)
        self.tree.fit(features([s for s, _ in train], feature_kind), [y for _, y in train])
        self.known = ip_rubric()
        self._cache: dict[str, int] = {}

    def predict(self, strings: list[str]) -> list[int]:
        return [int(v) for v in self.tree.predict(features(strings, self.kind))]

    def label(self, x: str, rng: np.random.Generator) -> int:
        if x not in self._cache:
            self._cache[x] = self.predict([x])[0]
        return self._cache[x]

    def generate(self, x: str, label: int, round_: int, rng: np.random.Generator) -> str:
        return sample_matching("ip_total", self.known.total, self.known.total(x), rng)


ALL_STRINGS = [format(i, f"0{N_BITS}b") for i in range(2**N_BITS)]
_INDEX: dict[tuple[str, Any], list[str]] = {}
_BUILT: set[str] = set()


def sample_matching(key_name: str, key: Any, target: Any, rng: np.random.Generator) -> str:
    """A uniform random 12-bit string s with key(s) == target.

    Rejection sampling from uniform strings until the key matches has exactly this
    distribution; indexing the 4,096 strings by key once makes it O(1).
    """
    bucket_key = (key_name, target)
    if key_name not in _BUILT:
        for s in ALL_STRINGS:
            _INDEX.setdefault((key_name, key(s)), []).append(s)
        _BUILT.add(key_name)
    bucket = _INDEX.get(bucket_key)
    if not bucket:
        raise DataError(f"no 12-bit string has {key_name} = {target}")
    return bucket[int(rng.integers(0, len(bucket)))]


class LabelNoise:
    """Wraps an evaluator and flips its label with probability p."""

    def __init__(self, inner: Any, p: float) -> None:
        self.inner, self.p = inner, p
        self.name = inner.name

    def label(self, x: Any, rng: np.random.Generator) -> int:
        y = self.inner.label(x, rng)
        return 1 - y if rng.random() < self.p else y

    def generate(self, x: Any, label: int, round_: int, rng: np.random.Generator) -> Any:
        return self.inner.generate(x, label, round_, rng)


class LieSigma(LabelNoise):
    """Lie 1, sigma unknown: x' matches the sorted multiset of criterion values,
    not their positions."""

    def __init__(self, inner: Any, p: float = 0.1) -> None:
        super().__init__(inner, p)
        self.name, self.known = "lie_sigma", ip_rubric()

    def generate(self, x: str, label: int, round_: int, rng: np.random.Generator) -> str:
        return sample_matching("ip_sorted", lambda t: tuple(sorted(self.known.top(t))),
                               tuple(sorted(self.known.top(x))), rng)


class LieF(LabelNoise):
    """Lie 2, f unknown: a random x' whose majority-vote label equals its label."""

    def __init__(self, inner: Any, p: float = 0.1) -> None:
        super().__init__(inner, p)
        self.name, self.known = "lie_f", ip_rubric()

    def generate(self, x: str, label: int, round_: int, rng: np.random.Generator) -> str:
        return sample_matching("ip_label", self.known.label, label, rng)


class LieGenerator(LabelNoise):
    """Lie 3: the generator returns a random string with probability p_lie."""

    def __init__(self, inner: Any, p: float = 0.1, p_lie: float = 0.1) -> None:
        super().__init__(inner, p)
        self.name, self.p_lie = "lie_generator", p_lie

    def generate(self, x: str, label: int, round_: int, rng: np.random.Generator) -> str:
        if rng.random() < self.p_lie:
            return random_strings(rng, 1)[0]
        return str(self.inner.generate(x, label, round_, rng))

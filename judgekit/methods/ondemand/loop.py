"""The labelling loop: sample each system's outputs, label only what is new, and
update every system's estimates. Labels are cached by instance id, so no
instance is judged twice across systems."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from judgekit.core import seeds
from judgekit.core.errors import DataError
from judgekit.core.textio import json_loads, read_text
from judgekit.methods.ondemand.estimators import joint_precision, weights_for


class JudgeLabel(BaseModel):
    reason: str
    correct: bool


@dataclass
class Instance:
    id: str
    text: str


def read_system_outputs(path: Path) -> list[Instance]:
    """A JSONL file of one system's instances: {"id": ..., "text": ...} per line."""
    if not path.exists():
        raise DataError(f"{path}: system output file not found")
    out = []
    for n, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json_loads(line)
            out.append(Instance(str(rec["id"]), str(rec["text"])))
        except (json.JSONDecodeError, KeyError) as exc:
            raise DataError(f"{path} line {n}: need JSON with 'id' and 'text' ({exc})") from exc
    return out


@dataclass
class LabellingLoop:
    systems: dict[str, list[Instance]]
    labeller: Callable[[list[Instance]], dict[str, bool]]
    seed: int = 0
    labels: dict[str, bool] = field(default_factory=dict)
    samples: dict[str, list[str]] = field(default_factory=dict)
    judged: list[str] = field(default_factory=list)
    draws: int = 0  # every call of sample() gets its own stream, re-samples included

    def sample(self, system: str, n: int) -> None:
        """Draw n instances uniformly from a system and label the unseen ones."""
        pool = self.systems[system]
        # Keyed by the draw count and the system's name: a re-sampled system does not
        # shift the next system onto a stream already used (identical positions).
        name_key = int.from_bytes(system.encode("utf-8")[:16].ljust(16, b"\0"), "little")
        rng = seeds.rng("ondemand.draw", self.seed, self.draws, name_key)
        self.draws += 1
        picked = [pool[i] for i in rng.integers(0, len(pool), size=n)]
        self.samples[system] = [x.id for x in picked]
        fresh = {x.id: x for x in picked if x.id not in self.labels}
        if fresh:
            got = self.labeller(list(fresh.values()))
            missing = set(fresh) - set(got)
            if missing:
                raise DataError(f"labeller returned no label for {sorted(missing)[:3]}")
            self.labels.update(got)
            self.judged += list(fresh)

    def estimates(self) -> dict[str, dict[str, float]]:
        """Simple and joint precision for every system sampled so far."""
        names = [s for s in self.systems if s in self.samples]
        ids = sorted({x.id for s in names for x in self.systems[s]})
        index = {k: i for i, k in enumerate(ids)}
        dists = []
        for s in names:
            p = np.zeros(len(ids))
            for x in self.systems[s]:
                p[index[x.id]] += 1
            dists.append(p / p.sum())
        f = np.array([float(self.labels.get(k, 0.0)) for k in ids])
        samples = [np.array([index[k] for k in self.samples[s]]) for s in names]
        w = weights_for(dists, [len(s) for s in samples])
        joint = joint_precision(dists, samples, f, w)
        return {s: {"simple": float(np.mean([self.labels[k] for k in self.samples[s]])),
                    "joint": float(joint[i])} for i, s in enumerate(names)}


Labeller = Callable[[list[Instance]], dict[str, bool]]


def llm_labeller(client: Any, model: str, rubric: str) -> Labeller:
    """Label instances with an LLM judge stage (prompts/ondemand_judge.j2)."""
    from judgekit.llm import Call, Stage

    stage = Stage("ondemand_judge", "ondemand_judge.j2", JudgeLabel,
                  sampling={"temperature": 0.0, "max_tokens": 200}, variables=("rubric", "text"))
    client.preflight([stage], [model])

    def label(batch: list[Instance]) -> dict[str, bool]:
        res = client.map_sync(stage, [Call({"rubric": rubric, "text": x.text}, model)
                                      for x in batch])
        out = {}
        for x, r in zip(batch, res):
            if not r.ok:
                raise DataError(f"judge failed to label instance {x.id}: {r.error}")
            out[x.id] = bool(r.value.correct)
        return out

    return label


def file_labeller(path: Path) -> Callable[[list[Instance]], dict[str, bool]]:
    """Labels read from a JSONL file of {"id": ..., "label": 0|1}."""
    table = {}
    for line in read_text(path).splitlines():
        if line.strip():
            rec = json_loads(line)
            table[str(rec["id"])] = bool(rec["label"])

    def label(batch: list[Instance]) -> dict[str, bool]:
        return {x.id: table[x.id] for x in batch if x.id in table}

    return label

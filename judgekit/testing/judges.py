"""Scripted judges, paraphrasers and an oracle verifier for auditing the audit.

Each judged item's response carries its true criterion values as a marker,
``[[c1=1 c2=0 c3=1]]``, which only the oracle verifier and the oracle judge read.
The scripts answer the No-Data stages' prompts (evaluator, generator, verifier)
through the mock provider, so the real runner, client and templates are exercised.

Judges: ``oracle`` (true values), ``random`` (seeded coin flips), ``constant``
(every criterion 1, label 1), ``liar`` (a wrong breakdown, self-consistent: it
claims one flipped criterion and labels by its claims). Paraphrasers:
``faithful`` keeps the original's true qualities (as capable LLMs tend to);
``realising`` writes the judge's claimed values into x'.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from judgekit.core.jsontypes import JSONObject
from judgekit.core.seeds import from_content
from judgekit.llm.types import ProviderRequest

_MARK = re.compile(r"\[\[((?:\s*c\d+=[01])+)\s*\]\]")
_CLAIM = re.compile(r"^- (c\d+) = ([01]):", re.MULTILINE)
_IDS = re.compile(r"for each of ([\w, ]+?)(?:,? in that order|\])")
_RESPONSE = re.compile(r"<RESPONSE>\n(.*?)\n</RESPONSE>", re.DOTALL)
_PROMPT = re.compile(r"<PROMPT>\n(.*?)\n</PROMPT>", re.DOTALL)


def make_items(n: int, criteria: int = 3, p: float = 0.7, seed: int = 0,
               pass_rate: float | None = None) -> list[JSONObject]:
    """Judged items whose true criterion values are drawn Bernoulli(p); label = all.
    ``pass_rate`` sets p so that a share ``pass_rate`` of items pass every criterion."""
    if pass_rate is not None:
        p = pass_rate ** (1 / criteria)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        vals = {f"c{j + 1}": int(rng.random() < p) for j in range(criteria)}
        out.append({"Prompt": f"Question {i}: explain topic {i}.",
                    "Output": f"Answer {i} about topic {i}. {marker(vals)}",
                    "Label": int(all(vals.values())),
                    "Rubric": dict(vals)})
    return out


def rubric_yaml(criteria: int = 3) -> str:
    lines = ["name: scripted", "aggregator: all", "criteria:"]
    lines += [f"  - id: c{j + 1}\n    description: quality {j + 1} holds." for j in
              range(criteria)]
    return "\n".join(lines) + "\n"


def marker(vals: dict[str, int]) -> str:
    return "[[" + " ".join(f"{k}={v}" for k, v in vals.items()) + "]]"


def truth_of(text: str) -> dict[str, int]:
    m = _MARK.search(text)
    if not m:
        return {}
    return {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}


def _user(req: ProviderRequest) -> str:
    return req.messages[-1]["content"]


def _response(req: ProviderRequest) -> str:
    m = _RESPONSE.search(_user(req))
    return m.group(1) if m else ""


def _ids(req: ProviderRequest) -> list[str]:
    m = _IDS.search(req.messages[0]["content"])
    return [x.strip() for x in m.group(1).split(",")] if m else []


def _coin(text: str, salt: str) -> np.random.Generator:
    return np.random.default_rng(from_content(f"{salt}|{text}".encode(), "little"))


def judge(kind: str) -> Callable[[ProviderRequest], str]:
    """The evaluator stage's answers for a scripted judge."""
    def answer(req: ProviderRequest) -> str:
        ids, text = _ids(req), _response(req)
        truth = truth_of(text)
        if kind == "oracle":
            vals = {c: truth.get(c, 0) for c in ids}
        elif kind == "constant":
            vals = {c: 1 for c in ids}
        elif kind == "random":
            rng = _coin(text, "random-judge")
            vals = {c: int(rng.random() < 0.5) for c in ids}
        elif kind == "liar":
            rng = _coin(text, "liar")
            flip = ids[int(rng.integers(len(ids)))]
            vals = {c: (1 - truth.get(c, 0)) if c == flip else truth.get(c, 0) for c in ids}
        else:
            raise ValueError(f"unknown scripted judge {kind!r}")
        label = int(all(vals.values()))
        if kind == "random":
            label = int(_coin(text, "random-label").random() < 0.5)
        return json.dumps({"criteria": [{"id": c, "value": v, "reason": "scripted"}
                                        for c, v in vals.items()], "label": label})
    return answer


def paraphraser(kind: str) -> Callable[[ProviderRequest], str]:
    """The generator stage's answers: a new surface, and either the original's true
    qualities (faithful) or the judge's claimed ones (realising)."""
    def answer(req: ProviderRequest) -> str:
        text = _response(req)
        prompt = _PROMPT.search(_user(req))
        claims = {c: int(v) for c, v in _CLAIM.findall(_user(req))}
        vals = truth_of(text) if kind == "faithful" else claims
        body = _MARK.sub("", text).strip()
        return json.dumps({"Prompt": f"Reworded: {prompt.group(1) if prompt else ''}",
                           "Output": f"In other words, {body} {marker(vals)}"})
    return answer


def oracle_verifier(req: ProviderRequest) -> str:
    """Scores every rubric item by the true values carried in the text."""
    truth = truth_of(_response(req))
    return json.dumps({"criteria": [{"id": c, "value": truth.get(c, 0)}
                                    for c in _ids(req)]})


def noisy_verifier(p: float) -> Callable[[ProviderRequest], str]:
    """The oracle verifier misreading each rubric item with probability ``p``, afresh
    for every text and draw (a re-read of the same text can disagree)."""
    return _misreading(p, lambda req: str(req.draw), f"noisy-verifier-{p}")


def fixed_verifier(p: float) -> Callable[[ProviderRequest], str]:
    """The oracle verifier at temperature 0: it misreads each rubric item with
    probability ``p`` as a fixed function of the text and the instruction's words, so
    a re-read under the same words repeats its misreads and one under reworded
    instructions draws them again."""
    return _misreading(p, lambda req: req.messages[0]["content"], f"fixed-verifier-{p}")


def _misreading(p: float, key: Callable[[ProviderRequest], str], salt: str
                ) -> Callable[[ProviderRequest], str]:
    """The oracle verifier flipping each item with probability ``p``, its coin seeded by
    the text and ``key(req)``."""
    def answer(req: ProviderRequest) -> str:
        text = _response(req)
        truth = truth_of(text)
        rng = _coin(f"{text}|{key(req)}", salt)
        return json.dumps({"criteria": [
            {"id": c, "value": (1 - truth.get(c, 0)) if rng.random() < p else truth.get(c, 0)}
            for c in _ids(req)]})
    return answer


def write_audit_data(work: Any, n: int, seed: int = 0, pass_rate: float | None = None
                     ) -> None:
    """``items.json`` (n judged items with known values) and ``rubric.yaml`` in ``work``."""
    from pathlib import Path

    folder = Path(work)
    (folder / "items.json").write_text(json.dumps(make_items(n, seed=seed,
                                                             pass_rate=pass_rate)))
    (folder / "rubric.yaml").write_text(rubric_yaml())


def scripted_audit(work: Any, judge_kind: str, para_kind: str, *, n: int,
                   check: str = "both", verifier_noise: float = 0.0,
                   as_result: bool = False, fixed: bool = False, **extra: Any) -> Any:
    """Run the real No-Data audit (the run pipeline, in memory) on ``work``'s items with a
    scripted judge and paraphraser and the oracle verifier, passed to the client as
    provider objects; return the results as results file would hold them (the typed
    RunResult with ``as_result``)."""
    from pathlib import Path

    from judgekit.llm import Client, ClientSettings
    from judgekit.llm.providers.mock import FunctionProvider
    from judgekit.methods.nodata.config import AuditConfig
    from judgekit.runs.pipeline import compute

    folder = Path(work)
    verifier = "oracle_verifier" if not verifier_noise else \
        f"{'fixed' if fixed else 'noisy'}_verifier_{verifier_noise}"
    read = oracle_verifier if not verifier_noise else \
        (fixed_verifier if fixed else noisy_verifier)(verifier_noise)
    client = Client(ClientSettings(use_cache=False, progress=False), providers={
        f"mock/judge_{judge_kind}": FunctionProvider(judge(judge_kind)),
        f"mock/para_{para_kind}": FunctionProvider(paraphraser(para_kind)),
        f"mock/{verifier}": FunctionProvider(read)})
    cfg = AuditConfig.model_validate({
        "method": "nodata", "experiment": "llm", "seed": 0, "rounds": 3, "phi": [0.5],
        "data_path": str(folder / "items.json"), "sample_size": n,
        "rubric": str(folder / "rubric.yaml"), "verifier_rubric": str(folder / "rubric.yaml"),
        "check": check, "use_cache": False, **extra,
        "models": {"evaluator": f"mock/judge_{judge_kind}", "generator": f"mock/para_{para_kind}",
                   "verifier": f"mock/{verifier}"}})
    try:
        result = compute(cfg, client)
        return result if as_result else result.model_dump(mode="json")
    finally:
        client.close()

"""The probe: a pairwise judge's verdicts under meaning-preserving transforms, measured
against the judge's own noise floor (identical re-runs).

Per pair: ``repeats`` verdicts in the original order (draws 0..k-1: the noise floor and
repeat reliability), then one verdict per transform at draw 0: ``swap`` (B first),
``rename`` (labels 1/2 for A/B), ``pad`` (neutral padding appended to one answer,
alternating A and B across pairs), and user template transforms. A transform's flip
rate counts items whose chosen answer changed from the original verdict; the noise
floor is the flip rate between the first two identical runs. Position bias is
P(first slot chosen) - 0.5 over both orders; the padding bias is the change in the
padded answer's win rate.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from judgekit.core import seeds as streams
from judgekit.judging.placebo import PLACEBO, placebo_tag
from judgekit.llm import Call, Client, Stage
from judgekit.methods.probe.analysis import analyse
from judgekit.methods.probe.config import ProbeConfig
from judgekit.methods.probe.pairs import Pair, attach_human_labels, load_pairs, pairs_from_datasets
from judgekit.methods.probe.payload import ProbePayload
from judgekit.stats.proportions import rate_with_interval


class Preference(BaseModel):
    winner: str  # first, so a small model's token budget goes to the verdict
    reason: str = ""


def stage(cfg: ProbeConfig) -> Stage:
    return Stage("judge", "probe_pairwise.j2", Preference,
                 sampling={"temperature": cfg.temperature, "max_tokens": cfg.max_tokens},
                 variables=("question", "first", "second", "label_a", "label_b"))




class Variant(BaseModel):
    name: str
    draw: int = 0
    swapped: bool = False
    labels: tuple[str, str] = ("A", "B")
    a: str
    b: str
    padded: Literal["a", "b"] | None = None  # the side a transform changed
    question_suffix: str = ""


def variants(cfg: ProbeConfig, pair: Pair, index: int, render: Any) -> list[Variant]:
    out = [Variant(name=f"run{d}", draw=d, a=pair.a, b=pair.b) for d in range(cfg.repeats)]
    side: Literal["a", "b"] = "a" if index % 2 == 0 else "b"
    for t in cfg.transforms or []:
        if t == "swap":
            out.append(Variant(name="swap", swapped=True, a=pair.a, b=pair.b))
        elif t == "rename":
            out.append(Variant(name="rename", labels=("1", "2"), a=pair.a, b=pair.b))
        elif t == "pad":
            text = cfg.padding.format(answer=getattr(pair, side))
            padded = {"a": pair.a, "b": pair.b, side: f"{getattr(pair, side)} {text}"}
            out.append(Variant(name="pad", a=padded["a"], b=padded["b"], padded=side))
        elif t == "inject":
            from judgekit.methods.probe.bias import injection, injection_language

            text = injection(injection_language(cfg.injection_language), "pair", index // 2,
                             cfg.injections)
            planted = {"a": pair.a, "b": pair.b, side: f"{getattr(pair, side)}\n\n{text}"}
            out.append(Variant(name="inject", a=planted["a"], b=planted["b"], padded=side))
    for tt in cfg.template_transforms:
        which = tt.apply_to if tt.apply_to != "alternate" else side
        texts = {"a": pair.a, "b": pair.b}
        texts[which] = render(tt.template, {"answer": texts[which], "question": pair.question})
        out.append(Variant(name=tt.name, a=texts["a"], b=texts["b"], padded=which))
    if cfg.placebo:
        out.append(Variant(name=PLACEBO, a=pair.a, b=pair.b, question_suffix=placebo_tag(
            cfg.seed, pair.id)))
    return out




def _call(cfg: ProbeConfig, pair: Pair, v: Variant) -> Call:
    first, second = (v.b, v.a) if v.swapped else (v.a, v.b)
    return Call({"question": pair.question + v.question_suffix, "first": first,
                 "second": second,
                 "label_a": v.labels[0], "label_b": v.labels[1]},
                cfg.models["judge"], draw=v.draw,
                sampling={"seed": streams.integer("probe.draw", cfg.seed, v.draw)})


def chosen(v: Variant, winner: str) -> str | None:
    """Which underlying answer ("a"/"b") a verdict picked, or None if unreadable."""
    w = winner.strip().strip(".").upper()
    slot = {v.labels[0].upper(): 0, v.labels[1].upper(): 1}.get(w)
    if slot is None:
        return None
    if v.swapped:
        slot = 1 - slot
    return "a" if slot == 0 else "b"


async def _collect(cfg: ProbeConfig, client: Client, pairs: list[Pair], indices: list[int]
                   ) -> list[dict[str, str | None]]:
    """Verdicts for ``pairs[i]``, i in ``indices`` (the index alternates padded sides)."""
    lib = client.templates
    client.preflight([stage(cfg)], [cfg.models["judge"]])
    per = [variants(cfg, pairs[i], i, lib.render_string) for i in indices]
    flat = [(k, indices[k], v) for k, vs in enumerate(per) for v in vs]
    res = await client.map(stage(cfg), [_call(cfg, pairs[i], v) for _, i, v in flat],
                           description="probe judge")
    out: list[dict[str, str | None]] = [{} for _ in indices]
    for (k, _i, v), r in zip(flat, res):
        out[k][v.name] = chosen(v, r.output.winner) if r.ok else None
        out[k][f"{v.name}:first"] = None if not r.ok else (
            "first" if (out[k][v.name] == "a") != v.swapped else "second")
        if v.padded:
            out[k][f"{v.name}:side"] = v.padded
    return out


def execute(cfg: ProbeConfig, client: Client) -> ProbePayload:
    """The probe's payload, pairwise or pointwise."""
    doc = _pointwise(cfg, client) if cfg.judge_mode == "pointwise" else _pairwise(cfg, client)
    return ProbePayload.model_validate(doc)


def _pairwise(cfg: ProbeConfig, client: Client) -> dict[str, Any]:
    from judgekit.methods.probe import sequential

    pairs = (load_pairs(cfg.data_path) if cfg.data_path else
             pairs_from_datasets(list(cfg.pairs_from), cfg.dataset_paths, cfg.n_pairs, cfg.seed))
    if cfg.human_labels:
        attach_human_labels(pairs, cfg.human_labels)
    if cfg.reference_labels:
        attach_human_labels(pairs, cfg.reference_labels, "reference")

    async def ask(idx: list[int]) -> list[dict[str, str | None]]:
        return await _collect(cfg, client, pairs, idx)

    asked, verdicts, seq = client.run_until_complete(
        sequential.gather(cfg, len(pairs), ask, False))
    results = analyse(cfg, [pairs[i] for i in asked], verdicts)
    if seq:
        sequential.apply(results, seq)
    return results


def headline(res: ProbePayload) -> str:
    floor = res.noise_floor.rate
    what = "placebo" if res.noise_floor.source == "placebo" else "re-run"
    if res.mode == "pointwise":
        return (f"{what} flip rate {_pct(floor)}; "
                + "; ".join(f"{t.name} excess {t.excess:+.3f}" for t in res.transforms))
    pos = res.position_bias
    if pos is None or pos.bias is None:
        return f"position bias n/a over 0 pairs (n/a); {what} flip rate {_pct(floor)}"
    return (f"position bias {pos.bias:+.3f} {_ci(pos.ci)} over {pos.n} pairs "
            f"({pos.verdict}); {what} flip rate {_pct(floor)}")


def _pointwise(cfg: ProbeConfig, client: Client) -> dict[str, Any]:
    from judgekit.data.judged import load_judged
    from judgekit.methods.probe import sequential
    from judgekit.methods.probe.pointwise import collect, planted

    items = load_judged(str(cfg.data_path), spec=cfg)
    if cfg.grader == "recorded" and "judge" not in cfg.models:
        from judgekit.methods.probe.pointwise import recorded_model

        cfg = cfg.model_copy(update={"models": {**cfg.models, "judge": recorded_model(items)}})

    async def ask(idx: list[int]) -> list[dict[str, str | None]]:
        labels = await collect(cfg, client, items, idx)
        # a pointwise verdict is a label: the pairwise bookkeeping with "a" = 1, "b" = 0
        out: list[dict[str, str | None]] = [
            {k: (None if v is None else ("a" if v == 1 else "b")) for k, v in lab.items()}
            for lab in labels]
        for i, v in zip(idx, out):
            if "inject" in v:
                v["inject:side"] = planted(i)
        return out

    asked, verdicts, seq = client.run_until_complete(
        sequential.gather(cfg, len(items), ask, True))
    pairs = [Pair(f"item{i}", items[i].Prompt, items[i].Output, "", None,
                  None if items[i].Label is None else ("a" if items[i].Label == 1 else "b"))
             for i in asked]
    results = analyse(cfg, pairs, verdicts, pointwise=True)
    results["mode"] = "pointwise"
    results["order_consistency"] = None
    results["pass_rate"] = dict(zip(("rate", "ci", "n"), rate_with_interval(
        [v["run0"] == "a" for v in verdicts if v.get("run0")], cfg.level)))
    if seq:
        sequential.apply(results, seq)
    return results


def _pct(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _ci(ci: Any) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"

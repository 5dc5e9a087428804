"""The pointwise probe: a rubric judge's label on one item under meaning-preserving
transforms, against its identical re-run noise floor.

Per judged item: ``repeats`` verdicts as given (draws 0..k-1), then one per transform:
``reorder`` (the rubric's criteria in reverse order), ``paraphrase`` (the same criteria,
reworded, from ``rubric_paraphrase``), ``pad`` (neutral padding appended to the answer),
and user template transforms of the answer. The padding bias is the change in the pass
rate when the answer is padded. Human labels (``Label``) give agreement and, with
``human_sample``, a prediction-powered pass rate.
"""

from __future__ import annotations

from typing import Any

from judgekit.data.judged import JudgedItem
from judgekit.judging import stages as st
from judgekit.judging.placebo import PLACEBO, placebo_tag
from judgekit.judging.rubric import Rubric, load_rubric
from judgekit.llm import Call, Client
from judgekit.probe.config import ProbeConfig
from judgekit.stats.bootstrap import derive_seed


def _rubric_vars(item: JudgedItem, output: str, rubric: Rubric) -> dict[str, Any]:
    text = ("1 if every criterion is 1, else 0" if rubric.aggregator == "all"
            else "1 if most criteria are 1, else 0")
    return {"prompt": item.Prompt, "output": output, "rubric": rubric,
            "criteria": rubric.criteria, "aggregator_text": text}


def planted(index: int) -> str:
    """The verdict an injection plants on item ``index``: pass and fail alternate."""
    return "a" if index % 2 == 0 else "b"


def variants(cfg: ProbeConfig, item: JudgedItem, rubric: Rubric, render: Any, key: str = "",
             index: int = 0) -> list[tuple[str, int, dict[str, Any]]]:
    """(name, draw, template variables) per verdict asked for this item."""
    out = [(f"run{d}", d, _rubric_vars(item, item.Output, rubric)) for d in range(cfg.repeats)]
    for t in cfg.transforms or []:
        if t == "reorder":
            rev = rubric.model_copy(update={"criteria": list(reversed(rubric.criteria))})
            out.append(("reorder", 0, _rubric_vars(item, item.Output, rev)))
        elif t == "paraphrase":
            para = load_rubric(str(cfg.rubric_paraphrase))
            if [c.id for c in para.criteria] != [c.id for c in rubric.criteria]:
                from judgekit.errors import ConfigError

                raise ConfigError(f"rubric_paraphrase {cfg.rubric_paraphrase} must have the "
                                  "same criteria ids, in the same order, as the rubric")
            out.append(("paraphrase", 0, _rubric_vars(item, item.Output, para)))
        elif t == "pad":
            padded = f"{item.Output} {cfg.padding.format(answer=item.Output)}"
            out.append(("pad", 0, _rubric_vars(item, padded, rubric)))
        elif t == "inject":
            from judgekit.probe.bias import injection, injection_language

            lang = injection_language(cfg.injection_language or rubric.language)
            text = injection(lang, planted(index), index // 2, cfg.injections)
            out.append(("inject", 0, _rubric_vars(item, f"{item.Output}\n\n{text}", rubric)))
    for tt in cfg.template_transforms:
        text = render(tt.template, {"answer": item.Output, "question": item.Prompt})
        out.append((tt.name, 0, _rubric_vars(item, text, rubric)))
    if cfg.placebo:
        tagged = item.model_copy(update={"Prompt": item.Prompt + placebo_tag(cfg.seed, key)})
        out.append((PLACEBO, 0, _rubric_vars(tagged, item.Output, rubric)))
    return out


async def collect(cfg: ProbeConfig, client: Client, items: list[JudgedItem],
                  indices: list[int] | None = None) -> list[dict[str, int | None]]:
    """Labels for ``items[i]``, i in ``indices`` (default: all), one dict per item."""
    rubric = load_rubric(cfg.rubric)
    idx = list(range(len(items))) if indices is None else indices
    per = [variants(cfg, items[i], rubric, client.templates.render_string, f"item{i}", i)
           for i in idx]
    flat = [(i, name, draw, v) for i, vs in enumerate(per) for name, draw, v in vs]
    stage = st.evaluator_all(cfg.max_tokens)
    client.preflight([stage], [cfg.models["judge"]])
    stage = type(stage)(stage.name, stage.template, stage.output,
                        sampling={"temperature": cfg.temperature, "max_tokens": cfg.max_tokens},
                        variables=stage.variables)
    res = await client.map(stage, [Call(v, cfg.models["judge"], draw=d,
                                        sampling={"seed": derive_seed(cfg.seed, d)})
                                   for _, _, d, v in flat], description="probe judge")
    out: list[dict[str, int | None]] = [{} for _ in idx]
    for (i, name, _, _), r in zip(flat, res):
        out[i][name] = int(r.output.label) if r.ok else None
    return out

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

from pydantic import BaseModel, Field

from judgekit.core import seeds as streams
from judgekit.data.judged import JudgedItem
from judgekit.judging import stages as st
from judgekit.judging.placebo import PLACEBO, placebo_tag
from judgekit.judging.rubric import Rubric, load_rubric
from judgekit.llm import Call, Client
from judgekit.methods.probe.config import ProbeConfig


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
                from judgekit.core.errors import ConfigError

                raise ConfigError(f"rubric_paraphrase {cfg.rubric_paraphrase} must have the "
                                  "same criteria ids, in the same order, as the rubric")
            out.append(("paraphrase", 0, _rubric_vars(item, item.Output, para)))
        elif t == "pad":
            padded = f"{item.Output} {cfg.padding.format(answer=item.Output)}"
            out.append(("pad", 0, _rubric_vars(item, padded, rubric)))
        elif t == "inject":
            from judgekit.methods.probe.bias import injection, injection_language

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


def recorded_variants(cfg: ProbeConfig, item: JudgedItem, render: Any, key: str = "",
                      index: int = 0) -> list[tuple[str, int, dict[str, Any]]]:
    """(name, draw, {"prompt": ...}) per verdict asked of a recorded grader: the prompt
    it was sent, with the answer in it replaced by the transformed answer (and, for the
    placebo, the reference id appended to the question where the prompt quotes it).
    A transform the prompt cannot take (the answer is not quoted in it verbatim) is
    left out of that item and counted as unreadable."""
    prompt = str(getattr(item, "GraderPrompt", "") or "")
    answer = item.Output
    out = [(f"run{d}", d, {"prompt": prompt}) for d in range(cfg.repeats)]
    if not answer or prompt.count(answer) != 1:
        return out

    def swap(text: str) -> dict[str, Any]:
        return {"prompt": prompt.replace(answer, text)}
    for t in cfg.transforms or []:
        if t == "pad":
            out.append(("pad", 0, swap(f"{answer} {cfg.padding.format(answer=answer)}")))
        elif t == "inject":
            from judgekit.methods.probe.bias import injection, injection_language

            lang = injection_language(cfg.injection_language or "en")
            text = injection(lang, planted(index), index // 2, cfg.injections)
            out.append(("inject", 0, swap(f"{answer}\n\n{text}")))
    for tt in cfg.template_transforms:
        out.append((tt.name, 0, swap(render(tt.template, {"answer": answer,
                                                          "question": item.Prompt}))))
    if cfg.placebo and item.Prompt and item.Prompt in prompt:
        # the first quote of the question: the task line, which Inspect's templates put
        # before everything else that may repeat it
        tagged = prompt.replace(item.Prompt, item.Prompt + placebo_tag(cfg.seed, key), 1)
        out.append((PLACEBO, 0, {"prompt": tagged}))
    return out


def recorded_model(items: list[JudgedItem]) -> str:
    """The grader model an Inspect log names (Inspect's model strings, e.g.
    openai/gpt-4o, are judgekit's where the provider is one of judgekit's)."""
    from judgekit.core.errors import DataError

    models = sorted({str(getattr(it, "GraderModel", None)) for it in items
                     if getattr(it, "GraderModel", None)})
    if not models:
        raise DataError("the log records no grader model (model_graded_qa/fact scores "
                        "carry it); name one with models.judge")
    if len(models) > 1:
        raise DataError(f"the log's scores were graded by {', '.join(models)}; choose one "
                        "with models.judge")
    from judgekit.llm.providers.base import providers

    if models[0].split("/", 1)[0] not in providers():
        raise DataError(f"the log's grader is {models[0]!r} (Inspect's name); judgekit has no "
                        f"provider {models[0].split('/', 1)[0]!r}: name the same model with "
                        "models.judge (e.g. local/NAME for an OpenAI-compatible server, "
                        "litellm/... for others)")
    return models[0]


class Grade(BaseModel):
    """A recorded grader's grade as its own pattern reads it (Inspect: C, P or I)."""

    grade: str = Field(min_length=1, max_length=40)


async def collect(cfg: ProbeConfig, client: Client, items: list[JudgedItem],
                  indices: list[int] | None = None) -> list[dict[str, int | None]]:
    """Labels for ``items[i]``, i in ``indices`` (default: all), one dict per item."""
    if cfg.grader == "recorded":
        return await _collect_recorded(cfg, client, items, indices)
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
                                        sampling={"seed": _draw_seed(cfg.seed, d)})
                                   for _, _, d, v in flat], description="probe judge")
    out: list[dict[str, int | None]] = [{} for _ in idx]
    for (i, name, _, _), r in zip(flat, res):
        out[i][name] = int(r.output.label) if r.ok else None
    return out


async def _collect_recorded(cfg: ProbeConfig, client: Client, items: list[JudgedItem],
                            indices: list[int] | None) -> list[dict[str, int | None]]:
    """``collect`` for a recorded grader: its prompts, free-text answers, its pattern."""
    from judgekit.core.errors import DataError
    from judgekit.llm import Stage
    from judgekit.recorded.base import label_of

    idx = list(range(len(items))) if indices is None else indices
    missing = [i for i in idx if not getattr(items[i], "GraderPrompt", None)]
    if missing:
        raise DataError(f"item {missing[0]} ({items[missing[0]].Source}) has no recorded "
                        "grader prompt: grader: recorded needs model-graded scores "
                        "(model_graded_qa, model_graded_fact) whose metadata.grading Inspect "
                        "kept; pick that scorer with scorer: NAME")
    patterns = {str(getattr(items[i], "GradePattern", "")) for i in idx}
    if len(patterns) != 1:
        raise DataError(f"the chosen scores read grades with {len(patterns)} patterns; "
                        "pick one scorer with scorer: NAME")
    model = cfg.models.get("judge") or recorded_model([items[i] for i in idx])
    stage = Stage("recorded grader", "recorded_grader.j2", Grade,
                  sampling={"temperature": cfg.temperature, "max_tokens": cfg.max_tokens},
                  variables=("prompt",), pattern=patterns.pop())
    client.preflight([stage], [model])
    per = [recorded_variants(cfg, items[i], client.templates.render_string, f"item{i}", i)
           for i in idx]
    flat = [(k, name, draw, v) for k, vs in enumerate(per) for name, draw, v in vs]
    res = await client.map(stage, [Call(v, model, draw=d,
                                        sampling={"seed": _draw_seed(cfg.seed, d)})
                                   for _, _, d, v in flat], description="recorded grader")
    out: list[dict[str, int | None]] = [{} for _ in idx]
    for (k, name, _, _), r in zip(flat, res):
        out[k][name] = label_of(r.value.grade, cfg.pass_threshold) \
            if r.ok and r.value is not None else None
    return out


def _draw_seed(seed: int, draw: int) -> int:
    """The provider seed of a verdict draw (the probe's ``probe.draw`` stream)."""
    return streams.integer("probe.draw", seed, draw)

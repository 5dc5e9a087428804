"""LLMBar evaluators' ``result.json`` (princeton-nlp/LLMBar): every instance judged in
both orders, with the gold label; read as two pairwise rows per instance, in the order
shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads, read_text
from judgekit.recorded.base import FORMATS, RecordedFormat, Table

__all__: list[str] = []


def _llmbar(path: Path) -> list[JSONObject]:
    """An LLMBar evaluator's result.json (princeton-nlp/LLMBar): each instance judged in
    both orders. Its winners name the output (1 or 2) whatever the order shown, and its
    label the better output; here they become two rows in the order shown."""
    try:
        doc = json_loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, list):
        raise DataError(f"{path}: an LLMBar result.json is a list of instances")
    rows: list[JSONObject] = []
    # one result.json is one LLMBar set (Dataset/<group>/<set>/evaluators/<judge>/...)
    parts = path.resolve().parts
    dataset = parts[-5] if len(parts) >= 5 and parts[-4] == "evaluators" else \
        path.parent.name
    for i, inst in enumerate(doc):
        try:
            last = inst["results"][-1]
            out = (str(inst["output_1"]), str(inst["output_2"]))
            label = int(inst["label"])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: instance {i} has no {exc} (LLMBar's result.json has "
                            "output_1, output_2, label and results)") from None
        for swap in (False, True):
            got = (last.get(f"swap = {swap}") or {}).get("winner")
            shown = out[::-1] if swap else out
            # the output the verdict (and the label) name, as the slot it was shown in
            slot = {("1", False): "first", ("2", False): "second", ("1", True): "second",
                    ("2", True): "first"}
            rows.append({"pair_id": str(i), "question": str(inst.get("input", "")),
                         "dataset": dataset,
                         "first": shown[0], "second": shown[1],
                         "winner": slot.get((str(got), swap), "unparsed"),
                         "label": slot.get((str(label), swap))})
    return rows


def _table(path: Path, roles: dict[str, str]) -> Table:
    return Table("pairwise", _llmbar(path), {
        "pair_id": "pair_id", "question": "question", "first": "first",
        "second": "second", "winner": "winner", "label": "label", "dataset": "dataset"})


def _sniff(doc: Any) -> bool:
    first = doc[0] if isinstance(doc, list) and doc and isinstance(doc[0], dict) else {}
    return "results" in first and "output_1" in first


FORMAT = FORMATS.add("llmbar", RecordedFormat(
    "llmbar", sniff=_sniff, table=_table,
    description="LLMBar result.json (pairs judged in both orders, gold labels)"))

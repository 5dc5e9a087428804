"""What the batch-engine tests (Ray, vLLM's runner) run: one structured stage over
numbered questions, through a client with the given settings."""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel

from judgekit.llm import Call, Client, ClientSettings, Stage
from judgekit.llm.templates import TemplateLibrary

from .conftest import TEST_PROMPTS


class Answer(BaseModel):
    answer: str
    confidence: float


STAGE = Stage("answer", "answer.j2", Answer, sampling={"temperature": 0.0, "max_tokens": 64})


async def run(s: ClientSettings, n: int, model: str = "local/m"):
    """The results of questions Q-0 .. Q-(n-1) asked of ``model``."""
    c = Client(s, templates=TemplateLibrary(TEST_PROMPTS))
    try:
        return await c.map(STAGE, [Call({"question": f"Q-{i}"}, model) for i in range(n)])
    finally:
        await c.aclose_providers()


def judge_answer(prompt: str) -> dict:
    """A pairwise judge's answer that depends on the prompt only: the probe's template
    ends "Which answer is better, A or B?"."""
    m = re.search(r"Which answer is better, (.+) or (.+)\?\s*$", prompt)
    a, b = (m.group(1), m.group(2)) if m else ("A", "B")
    h = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16)
    return {"winner": a if h % 3 else b, "reason": "r"}

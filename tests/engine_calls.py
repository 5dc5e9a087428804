"""What the batch-engine tests (Ray, vLLM's runner) run: one structured stage over
numbered questions, through a client with the given settings."""

from __future__ import annotations

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

"""Throughput of the packaged Gemma 3 270M behind the llama.cpp server on loopback:
a fixed structured prompt at concurrency 1 and 2. Last line: JSON figures."""

from __future__ import annotations

import json
import time
from pathlib import Path

from _smoke import SMOKE, argv, pick
from pydantic import BaseModel

HERE = Path(__file__).resolve().parent


class Verdict(BaseModel):
    answer: str
    confidence: float


KEYS = [f"{k}_c{c}" for c in (1, 2) for k in ("calls_per_s", "tokens_per_s", "parsed")]


def main(calls: int = 6) -> None:
    from judgekit.core.errors import MissingDependencyError
    from judgekit.local.server import default_model_path

    try:
        default_model_path()
        import llama_cpp  # noqa: F401
    except (MissingDependencyError, ImportError) as exc:  # no [local] extra: said so
        if not SMOKE:
            raise
        print(json.dumps({**dict.fromkeys(KEYS), "tokens_per_s": None,
                          "skipped": f"the local model is not installed: {exc}"}))
        return
    from judgekit.llm import Call, Client, ClientSettings, Stage
    from judgekit.llm.templates import TemplateLibrary
    from judgekit.local.server import LocalServer

    stage = Stage("bench", "bench.j2", Verdict, sampling={"temperature": 0.0, "max_tokens": 64})
    figures: dict[str, float] = {}
    with LocalServer() as srv:
        for conc in (1, 2):
            client = Client(ClientSettings(use_cache=False, concurrency=conc, progress=False,
                                           base_urls={"local": srv.base_url}),
                            templates=TemplateLibrary(HERE / "prompts"))
            batch = [Call({"i": i + 100 * conc, "question": "What is the capital of France?"},
                          "local/gemma-3-270m") for i in range(calls)]
            t = time.perf_counter()
            res = client.map_sync(stage, batch)
            dt = time.perf_counter() - t
            client.close()
            toks = sum(r.usage.completion_tokens for r in res)
            figures[f"calls_per_s_c{conc}"] = round(calls / dt, 3)
            figures[f"tokens_per_s_c{conc}"] = round(toks / dt, 2)
            figures[f"parsed_c{conc}"] = sum(r.ok for r in res)
    figures["tokens_per_s"] = figures["tokens_per_s_c1"]
    for k, v in figures.items():
        print(f"{k:>16}: {v}")
    print(json.dumps(figures))


if __name__ == "__main__":
    args = argv()
    main(int(args[0]) if args else pick(6, 2))

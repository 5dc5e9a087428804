"""USD prices per million tokens (input, output) for models whose prices we know.

Unknown models get no cost (reported as null), never a guess.
"""

from __future__ import annotations

PRICES: dict[str, tuple[float, float]] = {
    "openai/gpt-4.1": (2.00, 8.00),
    "openai/gpt-4.1-mini": (0.40, 1.60),
    "openai/gpt-4.1-nano": (0.10, 0.40),
    "openai/gpt-4o": (2.50, 10.00),
    "openai/gpt-4o-mini": (0.15, 0.60),
    "openai/o3-mini": (1.10, 4.40),
    "anthropic/claude-3-5-haiku-latest": (0.80, 4.00),
    "anthropic/claude-sonnet-4-0": (3.00, 15.00),
}
FREE_PROVIDERS = ("local/", "mock/")


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    if model.startswith(FREE_PROVIDERS):
        return 0.0
    price = PRICES.get(model)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6

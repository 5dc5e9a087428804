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


# Prompt-cache rates as multiples of the input price: (write, read). Anthropic bills a
# 5-minute cache write at 1.25x and a read at 0.1x; OpenAI's cached input is 0.25x for
# the GPT-4.1 family and 0.5x for GPT-4o and o3-mini, with no write surcharge.
CACHE_RATES: dict[str, tuple[float, float]] = {
    "anthropic/": (1.25, 0.10),
    "openai/gpt-4.1": (1.0, 0.25),
    "openai/": (1.0, 0.50),
}


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int,
             cache_write_tokens: int = 0, cache_read_tokens: int = 0) -> float | None:
    """USD for one or more requests; ``prompt_tokens`` includes the cache tokens."""
    if model.startswith(FREE_PROVIDERS):
        return 0.0
    price = PRICES.get(model)
    if price is None:
        return None
    write_x, read_x = next((r for p, r in CACHE_RATES.items() if model.startswith(p)),
                           (1.0, 1.0))
    plain = max(0, prompt_tokens - cache_write_tokens - cache_read_tokens)
    prompt = plain + cache_write_tokens * write_x + cache_read_tokens * read_x
    return (prompt * price[0] + completion_tokens * price[1]) / 1e6

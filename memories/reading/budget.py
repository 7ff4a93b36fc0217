"""Token budgets of reads: what a memory costs to read, and how many fit a budget.

Tokens are estimated as ceil(characters / 4) everywhere (the generated `tokens_*` columns).
"""

from collections.abc import Callable, Sequence
from typing import TypeVar

from memories.models import Memory

Item = TypeVar("Item")


def reading_tokens(memory: Memory, *, raw: bool = False) -> int:
    """Estimated tokens of the text a read returns: the compressed form where there is one
    (unless `raw`), else the text as written."""
    if memory.content_optimized is not None and not raw:
        return memory.tokens_optimized
    return memory.tokens_raw


def fit_to_budget(items: Sequence[Item], tokens_of: Callable[[Item], int], max_tokens: int) -> tuple[list, list]:
    """(kept, cut): the items in their order while their tokens add up to at most `max_tokens`;
    one too long to fit is cut and the next ones still get their chance, so a single long memory
    does not hide the short ones after it."""
    kept, cut, spent = [], [], 0
    for item in items:
        cost = tokens_of(item)
        if spent + cost <= max_tokens:
            kept.append(item)
            spent += cost
        else:
            cut.append(item)
    return kept, cut

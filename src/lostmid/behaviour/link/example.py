"""One example of a link study: its needle prompt, the greedy reply and its correctness,
and the gold needle's reach on the answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def link_prompt(
    tokenizer: Any, fmt: Any, design: Mapping[str, Any], depth: int, index: int
) -> tuple[Any, list[int], tuple[int, int]]:
    """An example of the design at ``depth``, drawn by its seed and ``index``: the needle
    example, its prompt's token ids and the needle's token span in them."""
    from lostmid.behaviour.tasks.needles import needles_example

    ex = needles_example(
        seed=int(design["seed"]),
        index=index,
        depth=depth,
        length=int(design["length"]),
        variant=str(design["task"]),
        distractors=int(design["distractors"]),
        count_tokens=lambda s: len(tokenizer.encode(s)),
    )
    ids, span = fmt.encode_span(ex, tokenizer, *ex.spans[0])
    return ex, ids, span


def link_example(
    loaded: Any, tokenizer: Any, fmt: Any, design: Mapping[str, Any], depth: int, index: int
) -> dict[str, Any]:
    """One example's record: its design keys, the needle's token span, the greedy reply
    and its correctness (pretrained only: the twin's answers are noise) and the gold
    span's reach (:meth:`lostmid.influence.gold.GoldSpanInfluence.record`)."""
    from lostmid.behaviour.decoding.answers import answer_correct
    from lostmid.behaviour.decoding.generate import greedy_from_cache
    from lostmid.influence.gold import gold_span_influence

    ex, ids, span = link_prompt(tokenizer, fmt, design, depth, index)
    answer = tokenizer.encode(ex.target)
    greedy = loaded.init == "pretrained"
    # the greedy answer goes on from the gradient pass's keys and values (the prompt's
    # but its last token, the answer's cut off) instead of reading the prompt again
    cache: Any = loaded.adapter.full_cache() if greedy else None
    reach = gold_span_influence(
        loaded, ids, span, answer, probes=int(design["probes"]), seed=index, cache=cache
    )
    right = reply = None
    if greedy:
        cache.crop(-(len(answer) + 1))
        said = greedy_from_cache(
            loaded.adapter,
            loaded.model,
            cache,
            ids[-1],
            int(design["budget"]),
            device=loaded.input_device,
        )
        reply = tokenizer.decode(said)
        right = answer_correct(str(design["scoring"]), reply, ex.references)
    return {"depth": depth, "index": index, "tokens": len(ids), "span": list(span)} | {
        "right": right,
        "reply": reply,
        **reach.record(),
    }

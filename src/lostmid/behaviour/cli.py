"""Command-line functions of the behaviour package, registered by ``lostmid.cli``.

Kept free of heavy imports: the work is imported when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from lostmid.behaviour.retrieve_config import HELP as RETRIEVE_HELP
from lostmid.errors import UserError
from lostmid.influence.config import HELP as MEASURE_HELP

console = Console()

# help of the retrieval-training options of ``lostmid train --task`` (registered there)
RETRIEVAL_HELP = {
    "task": "Train on retrieval instead of text: kv | mqar (presets retrieval-tiny, "
    "retrieval-valley, mqar-tiny, retrieval-micro).",
    "pairs": "Retrieval: pairs per example.",
    "key_chars": "Retrieval (kv): key/value characters.",
    "style": "Retrieval (kv): compact | liu.",
    "gold": "Retrieval: gold index law for training: uniform | power:A | beta:A (A < 1: "
    "the ends more often) | LAW+LAW (equal mixture).",
    "mix": "Retrieval: fraction of rows from the stdlib corpus.",
    "eval_every": "Retrieval: also evaluate every N steps (0: off).",
}


def parse_ints(option: str, text: str | None) -> tuple[int, ...] | None:
    """``"0,10,20"`` -> (0, 10, 20); None stays None; anything else is one line.

    >>> parse_ints("--gold-index", "0, 10,20")
    (0, 10, 20)
    """
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UserError(
            f"{option} takes comma-separated whole numbers, e.g. 0,10,20; got {text!r}"
        ) from None


def retrieve(
    model: Annotated[str, typer.Option("--model", help=RETRIEVE_HELP["model"])],
    task: Annotated[str, typer.Option("--task", help=RETRIEVE_HELP["task"])] = "kv",
    pairs: Annotated[int, typer.Option("--pairs", help=RETRIEVE_HELP["pairs"])] = 75,
    gold_index: Annotated[
        str | None, typer.Option("--gold-index", help=RETRIEVE_HELP["gold_index"])
    ] = None,
    depth: Annotated[str | None, typer.Option("--depth", help=RETRIEVE_HELP["depth"])] = None,
    positions: Annotated[
        int | None, typer.Option("--positions", help=RETRIEVE_HELP["positions"])
    ] = None,
    examples: Annotated[
        int | None, typer.Option("--examples", help=RETRIEVE_HELP["examples"])
    ] = None,
    length: Annotated[int | None, typer.Option("--length", help=RETRIEVE_HELP["length"])] = None,
    lengths: Annotated[str | None, typer.Option("--lengths", help=RETRIEVE_HELP["lengths"])] = None,
    key_chars: Annotated[int, typer.Option("--key-chars", help=RETRIEVE_HELP["key_chars"])] = 36,
    style: Annotated[str, typer.Option("--style", help=RETRIEVE_HELP["style"])] = "liu",
    query_aware: Annotated[
        bool, typer.Option("--query-aware", help=RETRIEVE_HELP["query_aware"])
    ] = False,
    haystack: Annotated[str, typer.Option("--haystack", help=RETRIEVE_HELP["haystack"])] = "repeat",
    vocab: Annotated[int, typer.Option("--vocab", help=RETRIEVE_HELP["vocab"])] = 64,
    passes: Annotated[str, typer.Option("--passes", help=RETRIEVE_HELP["passes"])] = "both",
    scoring: Annotated[str, typer.Option("--scoring", help=RETRIEVE_HELP["scoring"])] = "auto",
    chat_template: Annotated[
        str, typer.Option("--chat-template", help=RETRIEVE_HELP["chat_template"])
    ] = "auto",
    max_length: Annotated[
        int | None, typer.Option("--max-length", help=RETRIEVE_HELP["max_length"])
    ] = None,
    design: Annotated[str, typer.Option("--design", help=RETRIEVE_HELP["design"])] = "moved",
    data: Annotated[Path | None, typer.Option("--data", help=RETRIEVE_HELP["data"])] = None,
    tokenizer: Annotated[
        str | None, typer.Option("--tokenizer", help=RETRIEVE_HELP["tokenizer"])
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help=RETRIEVE_HELP["batch_size"])] = 8,
    device: Annotated[str, typer.Option("--device", help=RETRIEVE_HELP["device"])] = "cpu",
    dtype: Annotated[str, typer.Option("--dtype", help=RETRIEVE_HELP["dtype"])] = "float32",
    device_map: Annotated[
        str | None, typer.Option("--device-map", help=MEASURE_HELP["device_map"])
    ] = None,
    export: Annotated[Path | None, typer.Option("--export", help=RETRIEVE_HELP["export"])] = None,
    export_lm_eval: Annotated[
        Path | None, typer.Option("--export-lm-eval", help=RETRIEVE_HELP["export_lm_eval"])
    ] = None,
    margin: Annotated[float, typer.Option("--margin", help=RETRIEVE_HELP["margin"])] = 0.05,
    out: Annotated[Path, typer.Option("--out", help="Directory for results.")] = Path(
        "results/retrieve"
    ),
    seed: Annotated[int, typer.Option("--seed", help=RETRIEVE_HELP["seed"])] = 0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace existing results in --out.")
    ] = False,
) -> None:
    """Retrieval accuracy by gold position (Liu's kv, RULER's needle, MQAR, your data),
    over one length or a length x depth grid."""
    from lostmid.behaviour.run import RetrieveConfig, run_retrieve

    config = RetrieveConfig(
        model=model,
        task=task,
        pairs=pairs,
        gold_index=parse_ints("--gold-index", gold_index),
        depth=parse_ints("--depth", depth),
        positions=positions,
        examples=examples,
        length=length,
        lengths=parse_ints("--lengths", lengths),
        key_chars=key_chars,
        style=style,
        query_aware=query_aware,
        haystack=haystack,
        vocab=vocab,
        passes=passes,
        scoring=scoring,
        chat_template=chat_template,
        max_length=max_length,
        design=design,
        data=data,
        tokenizer=tokenizer,
        batch_size=batch_size,
        device=device,
        dtype=dtype,
        device_map=device_map,
        export=export,
        export_lm_eval=export_lm_eval,
        margin=margin,
        seed=seed,
    )
    run_retrieve(config, out=out, overwrite=overwrite, console=console)

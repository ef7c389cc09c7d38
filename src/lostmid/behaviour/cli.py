"""Command-line functions of the behaviour package, registered by ``lostmid.cli``.

Kept free of heavy imports: the work is imported when a command runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

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
    "no_rope": "Retrieval: train without positional encoding (rotary embeddings made the "
    "identity; the paper says the bias needs none).",
    "signal_examples": "Retrieval: held-out examples per gold index behind each record's "
    "learning signal (0: off).",
    "resume": "Continue from --out/resume.pt (text) or the run saved in --out (retrieval).",
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
    model: Annotated[
        str,
        typer.Option(
            "--model", help="Local directory, cached hub id, preset, or a lostmid checkpoint."
        ),
    ],
    task: Annotated[str, typer.Option("--task", help="kv | niah | mqar")] = "kv",
    pairs: Annotated[int, typer.Option("--pairs", help="Key-value pairs (kv, mqar).")] = 75,
    gold_index: Annotated[
        str | None,
        typer.Option("--gold-index", help="Gold indices, 0-indexed, e.g. 0,10,20 (kv, mqar)."),
    ] = None,
    depth: Annotated[
        str | None, typer.Option("--depth", help="Needle depths in %, e.g. 0,50,100 (niah).")
    ] = None,
    positions: Annotated[
        int | None,
        typer.Option("--positions", help="K evenly spaced positions, first and last included."),
    ] = None,
    examples: Annotated[int, typer.Option("--examples", help="Examples per gold position.")] = 20,
    length: Annotated[
        int | None, typer.Option("--length", help="Context length in tokens (niah; 1024).")
    ] = None,
    key_chars: Annotated[
        int, typer.Option("--key-chars", help="Key/value characters (36: a UUID4).")
    ] = 36,
    style: Annotated[
        str, typer.Option("--style", help="kv prompt: liu (Liu et al.) | compact {kv,kv,..}k")
    ] = "liu",
    query_aware: Annotated[
        bool, typer.Option("--query-aware", help="Also put the key before the data (kv).")
    ] = False,
    haystack: Annotated[
        str, typer.Option("--haystack", help="niah filler: repeat | varied")
    ] = "repeat",
    vocab: Annotated[int, typer.Option("--vocab", help="mqar vocabulary (keys | values).")] = 64,
    scoring: Annotated[str, typer.Option("--scoring", help="generate | teacher | both")] = "both",
    tokenizer: Annotated[
        str | None,
        typer.Option("--tokenizer", help="Tokenizer directory, cached hub id, or 'bytes'."),
    ] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Examples per forward.")] = 8,
    device: Annotated[str, typer.Option("--device", help="cpu | cuda[:N]")] = "cpu",
    dtype: Annotated[str, typer.Option("--dtype", help="float32 | bfloat16 | float16")] = (
        "float32"
    ),
    device_map: Annotated[
        str | None, typer.Option("--device-map", help=MEASURE_HELP["device_map"])
    ] = None,
    export: Annotated[
        Path | None, typer.Option("--export", help="Also write the examples as JSON lines.")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Directory for results.")] = Path(
        "results/retrieve"
    ),
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace existing results in --out.")
    ] = False,
) -> None:
    """Retrieval accuracy by gold position (Liu's kv, RULER's needle, MQAR)."""
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
        key_chars=key_chars,
        style=style,
        query_aware=query_aware,
        haystack=haystack,
        vocab=vocab,
        scoring=scoring,
        tokenizer=tokenizer,
        batch_size=batch_size,
        device=device,
        dtype=dtype,
        device_map=device_map,
        export=export,
        seed=seed,
    )
    run_retrieve(config, out=out, overwrite=overwrite, console=console)

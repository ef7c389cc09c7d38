"""Retrieval training: the loss mask, the batches, evaluation bookkeeping, and a short run
whose checkpoints ``lostmid retrieve`` reads back with the same numbers."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from lostmid.behaviour.tasks.gold import gold_distribution
from lostmid.behaviour.training import (
    HeldOut,
    RetrievalBatches,
    RetrievalTask,
    RetrievalTrainConfig,
    evaluate_checkpoint,
    masked_next_token_loss,
    retrieval_preset,
    run_retrieval_training,
    sequence_length,
    span_means,
)
from lostmid.errors import UserError
from lostmid.train.loop import next_token_loss
from lostmid.train.model import build_model


def _answer_of_compact_row(text: str, chars: int) -> str:
    """Brute force: parse ``{kv,...}kv`` (keys and values of ``chars`` characters) and
    look the key up."""
    body, query = text[1:].split("}")
    table = {pair[:chars]: pair[chars:] for pair in body.split(",")}
    return table[query[:chars]]


def test_kv_mask_covers_exactly_the_answer_tokens() -> None:
    task = RetrievalTask(task="kv", pairs=5, key_chars=2, style="compact")
    length = sequence_length(task)
    sampler = RetrievalBatches(task, batch_size=16, seed=3, length=length)
    tokens, mask = sampler.sample(7)
    assert tokens.shape == (16, length) and mask.shape == (16, length - 1)
    for row in range(16):
        text = bytes(tokens[row].tolist()).decode()
        answer = _answer_of_compact_row(text, 2)
        masked = tokens[row, 1:][mask[row] > 0]
        assert bytes(masked.tolist()).decode() == answer
        assert text.endswith(answer) and len(text) == length
    assert torch.equal(sampler.sample(7)[0], tokens)  # a pure function of the step
    assert not torch.equal(sampler.sample(8)[0], tokens)


def test_gold_indices_are_drawn_uniformly_by_default() -> None:
    task = RetrievalTask(task="kv", pairs=4, key_chars=1, style="compact")
    sampler = RetrievalBatches(task, batch_size=64, seed=0, length=sequence_length(task))
    counts = np.zeros(4)
    for step in range(10):
        for row in sampler.batch(step).tolist():
            text = bytes(row).decode()
            keys = [pair[0] for pair in text[1:].split("}")[0].split(",")]
            counts[keys.index(text.split("}")[1][0])] += 1
    assert counts.sum() == 640 and counts.min() > 120  # expected 160 each


def test_valley_preset_draws_first_queries_from_its_beta_law() -> None:
    """retrieval-valley trains on gold beta:0.3: the first query of each row (parsed from
    the row's text) lands on each index with the binned Beta(0.3, 0.3) frequency."""
    task = retrieval_preset("retrieval-valley").task
    assert task.gold == "beta:0.3" and task.key_chars == 2
    sampler = RetrievalBatches(task, batch_size=100, seed=3, length=sequence_length(task))
    counts = np.zeros(task.pairs)
    for step in range(30):
        for row in sampler.batch(step).tolist():
            text = bytes(row).decode()
            keys = [pair[:2] for pair in text[1:].split("}")[0].split(",")]
            counts[keys.index(text.split("}")[1][:2])] += 1
    expected = 3000 * gold_distribution("beta:0.3", task.pairs)
    assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected) + 1)
    assert counts[0] > 3 * counts[3] and counts[-1] > 3 * counts[4]  # the ends asked most


def test_mqar_rows_and_corpus_mix() -> None:
    task = RetrievalTask(task="mqar", pairs=6, vocab=32, offset=100, queries=3)
    stream = np.frombuffer(b"abcdefghij" * 50, dtype=np.uint8)
    sampler = RetrievalBatches(task, batch_size=8, seed=1, length=sequence_length(task))
    tokens, mask = sampler.sample(0)
    for row in range(8):
        ids = tokens[row].tolist()
        table = dict(zip(ids[0:12:2], ids[1:12:2], strict=True))
        queries = ids[12::2]
        assert len(set(queries)) == 3 and mask[row].sum() == 3
        assert tokens[row, 1:][mask[row] > 0].tolist() == [table[q] for q in queries]
    mixed = dataclasses.replace(task, mix=0.25)
    rows, masks = RetrievalBatches(mixed, 8, 1, sequence_length(task), stream).sample(0)
    corpus_rows = [r for r in range(8) if masks[r].sum() == masks.shape[1]]
    assert corpus_rows == [0, 1] and all(int(t) < 107 for t in rows[0])


def test_masked_loss_matches_the_shared_loop_loss_and_one_hot_ce() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=gen)
    targets = torch.randint(0, 11, (3, 5), generator=gen)
    weight = torch.tensor([0.0, 1.0, 2.0, 0.5, 0.0])
    shared = masked_next_token_loss(logits, targets, weight.expand(3, 5))
    torch.testing.assert_close(shared, next_token_loss(logits, targets, weight))
    mask = torch.zeros(3, 5)
    mask[0, 4] = mask[1, 0] = mask[2, 2] = 1.0
    manual = np.mean(
        [
            -torch.log_softmax(logits[b, t], -1)[targets[b, t]].item()
            for b, t in ((0, 4), (1, 0), (2, 2))
        ]
    )
    assert float(masked_next_token_loss(logits, targets, mask)) == pytest.approx(manual, rel=1e-6)


def test_evaluation_counts_every_example_once() -> None:
    config = retrieval_preset("retrieval-micro")
    heldout = HeldOut.build(config)
    model = build_model(config.resolved_train().model, seed=0)
    checkpoint = evaluate_checkpoint(model, heldout, config, step=0, tokens_seen=0, train_loss=None)
    pairs, per = config.task.pairs, config.eval_examples
    assert [p.position for p in checkpoint.positions] == list(range(pairs))
    assert [p.n for p in checkpoint.positions] == [per] * pairs
    assert checkpoint.summary.n == pairs * per
    assert len(checkpoint.influence) == len(heldout.prompts[0])
    np.testing.assert_allclose(
        checkpoint.record_influence,
        [np.mean(checkpoint.influence[a:b]) for a, b in heldout.spans],
    )
    assert span_means(np.array(checkpoint.influence), list(heldout.spans)).shape == (pairs,)


def test_config_errors() -> None:
    with pytest.raises(UserError, match="--mix must be in \\[0, 1\\]"):
        RetrievalTask(mix=1.5)
    with pytest.raises(UserError, match="--queries must be <= --pairs"):
        RetrievalTask(task="mqar", pairs=2, queries=3)
    with pytest.raises(UserError, match="--task 'niah' unknown"):
        RetrievalTask(task="niah")
    with pytest.raises(UserError, match="--preset 'huge' unknown"):
        retrieval_preset("huge")
    with pytest.raises(UserError, match="--eval-every must be >= 0"):
        RetrievalTrainConfig(eval_every=-1)


def test_short_run_checkpoints_read_back_by_retrieve(
    tmp_path: Path, run_cli: Callable[..., tuple[int, str, str]]
) -> None:
    config = dataclasses.replace(retrieval_preset("retrieval-micro"), save_checkpoints=True)
    result = run_retrieval_training(config, out=tmp_path / "t")
    assert [c.step for c in result.checkpoints] == [0, 3, 6]
    written = json.loads((tmp_path / "t" / "retrieval.json").read_text())
    assert [c["step"] for c in written["checkpoints"]] == [0, 3, 6]
    assert written["metadata"]["command"] == "train-retrieval"
    assert written["link"]["final"]["step"] == 6
    assert (tmp_path / "t" / "retrieval.png").is_file()
    code, _, err = run_cli(
        "retrieve", "--model", tmp_path / "t" / "checkpoints" / "step_000006",
        "--task", "kv", "--pairs", "4", "--key-chars", "1", "--style", "compact",
        "--positions", "4", "--examples", "3", "--passes", "teacher", "--out", tmp_path / "r",
    )  # fmt: skip
    assert code == 0, err
    retrieved = json.loads((tmp_path / "r" / "retrieve.json").read_text())
    assert retrieved["tokenizer"] == "bytes"
    for mine, theirs in zip(result.final.positions, retrieved["positions"], strict=True):
        assert mine.position == theirs["index"] and mine.correct == theirs["correct"]
        assert mine.mean_logprob == pytest.approx(theirs["mean_logprob"], abs=1e-4)
    code, _, err = run_cli("retrieve", "--model", "x", "--out", tmp_path / "t")
    assert code == 2
    with pytest.raises(
        UserError, match="add --resume to the same command to continue it, or pass --overwrite"
    ):
        run_retrieval_training(config, out=tmp_path / "t")


def test_train_command_applies_its_overrides(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lostmid.cli import app

    args = ["train", "--task", "kv", "--preset", "retrieval-micro", "--steps", "2"]
    args += ["--pairs", "3", "--seed", "5"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "retrieval.json").read_text())
    assert written["config"]["task"]["pairs"] == 3 and written["config"]["train"]["seed"] == 5
    assert [c["step"] for c in written["checkpoints"]] == [0, 2]
    assert [p["index"] for p in written["checkpoints"][-1]["positions"]] == [0, 1, 2]


def test_kv_extra_queries_are_masked_answers() -> None:
    task = RetrievalTask(task="kv", pairs=6, key_chars=1, style="compact", queries=3)
    sampler = RetrievalBatches(task, batch_size=8, seed=2, length=sequence_length(task))
    tokens, mask = sampler.sample(1)
    for row in range(8):
        text = bytes(tokens[row].tolist()).decode()
        body, asked = text[1:].split("}")
        table = {pair[0]: pair[1] for pair in body.split(",")}
        keys, answers = asked[0::2], asked[1::2]
        assert len(set(keys)) == 3 and answers == "".join(table[k] for k in keys)
        assert bytes(tokens[row, 1:][mask[row] > 0].tolist()).decode() == answers
    with pytest.raises(UserError, match="--queries > 1 needs --style compact"):
        RetrievalTask(task="kv", pairs=6, key_chars=4, style="liu", queries=2)


def test_gap_noise_floor_against_exact_enumeration() -> None:
    """E[max - min] of G independent Binomial(n, p)/n, enumerated exactly for small n."""
    from itertools import product
    from math import comb

    from lostmid.behaviour.training.evaluate import gap_noise_floor

    n, p, positions = 4, 0.3, 3
    pmf = [comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    exact = sum(
        np.prod([pmf[k] for k in ks]) * (max(ks) - min(ks)) / n
        for ks in product(range(n + 1), repeat=positions)
    )
    assert gap_noise_floor(p, positions, n, draws=200_000) == pytest.approx(exact, abs=2e-3)
    with pytest.raises(UserError, match="accuracy must be in"):
        gap_noise_floor(1.5, 3, 10)

"""Inference-time remedies on a model that ``lostmid retrieve`` accepts."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from lostmid.behaviour.tasks.kv import kv_example
from lostmid.errors import UserError
from lostmid.remedies import RemediesConfig, run_remedies


def test_query_aware_scores_the_same_items_with_the_key_also_before_the_data(
    tmp_path: Path,
) -> None:
    config = RemediesConfig(
        remedies=("query-aware", "calibrate", "ms-poe"),
        model="tiny-qwen2",
        tokenizer="bytes",
        key_chars=2,
        pairs=3,
        examples=4,
        seeds=2,
    )
    result = run_remedies(config, out=tmp_path)
    names = [(r.name, r.kind) for r in result.remedies]
    assert names == [
        ("baseline", "inference"),
        ("query-aware", "inference"),
        ("calibrate", "inference"),
        ("ms-poe", "inference"),
    ]
    document = json.loads((tmp_path / "remedies.json").read_text())
    assert [s for s in document["metadata"]["stages"]["computed"] if s.startswith("train")] == []
    for seed in (0, 1):
        plain = json.loads(
            (tmp_path / "stages" / f"inference-baseline-seed{seed}.json").read_text()
        )
        aware = json.loads(
            (tmp_path / "stages" / f"inference-query-aware-seed{seed}.json").read_text()
        )
        plain, aware = plain["result"], aware["result"]
        key = kv_example(seed=seed, index=0, pairs=3, gold_index=0, key_chars=2).key
        # byte tokens: exactly the added 'Key: "kk"\n\n' more per prompt
        assert aware["prompt_tokens"] - plain["prompt_tokens"] == len(f'Key: "{key}"\n\n')
        assert plain["positions"] == aware["positions"] == [0, 1, 2]
        assert plain["n"] == [4, 4, 4] and aware["forward_passes"] == 1
        assert plain["parameters"] == aware["parameters"]
    passes = {r["name"]: r["extra_forward_passes"] for r in document["remedies"]}
    assert passes == {"baseline": 0, "query-aware": 0, "calibrate": 1, "ms-poe": 0}
    for record in document["remedies"][1:]:
        assert record["difference_to_baseline"] is not None and record["verdict"] is not None


def _logits(model: torch.nn.Module, ids: torch.Tensor, **kwargs: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids, **kwargs).logits


def test_ms_poe_with_ratio_one_is_the_model_and_a_uniform_ratio_divides_the_frequencies() -> None:
    from lostmid.models import load_model
    from lostmid.remedies.patches import ms_poe

    model = load_model("tiny-qwen2", seed=0).model  # 4 heads, 2 key/value heads
    ids = torch.tensor([[5, 17, 3, 250, 9, 9, 41, 77, 2, 130]])
    plain = _logits(model, ids)
    with ms_poe(model, ratios=[1.0, 1.0]):
        same = _logits(model, ids)
    torch.testing.assert_close(same, plain, rtol=1e-5, atol=1e-5)
    reference = copy.deepcopy(model)
    reference.model.rotary_emb.inv_freq.div_(1.5)  # every head at positions / 1.5
    with ms_poe(model, ratios=[1.5, 1.5]):
        scaled = _logits(model, ids)
    torch.testing.assert_close(scaled, _logits(reference, ids), rtol=1e-5, atol=1e-5)
    assert (scaled - plain).abs().max() > 1e-4
    torch.testing.assert_close(_logits(model, ids), plain)  # restored on exit
    positions = torch.arange(10)[None] + 7  # explicit position ids are honoured
    with ms_poe(model, ratios=[1.5, 1.5]):
        shifted = _logits(model, ids, position_ids=positions)
    torch.testing.assert_close(
        shifted, _logits(reference, ids, position_ids=positions), rtol=1e-5, atol=1e-5
    )


def test_ms_poe_per_head_ratios_match_a_per_group_reference() -> None:
    """Two key/value groups with ratios 1.2 and 1.8: the attention output of each group
    equals that of a copy whose frequencies are divided by that group's ratio."""
    from lostmid.models import load_model
    from lostmid.remedies.patches import ms_poe

    model = load_model("tiny-qwen2", seed=1).model
    ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]])
    outputs: list[torch.Tensor] = []
    attention = model.model.layers[0].self_attn
    handle = attention.o_proj.register_forward_hook(lambda m, a, o: outputs.append(a[0]))
    with ms_poe(model, ratios=[1.2, 1.8]):
        _logits(model, ids)
    for ratio in (1.2, 1.8):
        reference = copy.deepcopy(model)
        reference.model.rotary_emb.inv_freq.div_(ratio)
        _logits(reference, ids)
    handle.remove()
    mixed, at12, at18 = (o.view(1, 8, 4, 8) for o in outputs)  # (B, T, heads, head_dim)
    torch.testing.assert_close(mixed[:, :, :2], at12[:, :, :2], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(mixed[:, :, 2:], at18[:, :, 2:], rtol=1e-5, atol=1e-6)


def test_ms_poe_refuses_a_model_without_rotary_positions() -> None:
    from lostmid.models import load_model
    from lostmid.remedies.patches import ms_poe

    model = load_model("tiny-gpt2").model
    with pytest.raises(UserError, match="ms-poe rescales rotary positions; model type 'gpt2'"):
        with ms_poe(model):
            pass


def test_calibration_removes_exactly_a_positional_prior() -> None:
    """If attention on the context is prior x relevance, calibration leaves attention
    proportional to relevance, with the context's mass and the other weights kept."""
    from lostmid.remedies.patches import calibrate_weights, prior_block

    gen = torch.Generator().manual_seed(0)
    t, start, end = 9, 2, 6
    prior = torch.softmax(torch.randn(1, 2, t, t, generator=gen), -1)
    relevance = torch.rand(1, 2, 1, t, generator=gen) + 0.1
    weights = prior * relevance
    weights = weights / weights.sum(-1, keepdim=True)
    out = calibrate_weights(weights, prior_block(prior, (start, end)), (start, end))
    torch.testing.assert_close(out.sum(-1), torch.ones(1, 2, t))
    torch.testing.assert_close(out[..., :end, :], weights[..., :end, :])  # earlier queries
    torch.testing.assert_close(out[..., end:, :start], weights[..., end:, :start])
    torch.testing.assert_close(out[..., end:, end:], weights[..., end:, end:])
    context = out[..., end:, start:end]
    torch.testing.assert_close(context.sum(-1), weights[..., end:, start:end].sum(-1))
    expected = relevance[..., start:end] / relevance[..., start:end].sum(-1, keepdim=True)
    torch.testing.assert_close(context / context.sum(-1, keepdim=True), expected.expand_as(context))


def test_the_calibrated_eager_path_is_the_model_when_no_layer_is_calibrated() -> None:
    from lostmid.models import load_model
    from lostmid.remedies.patches import calibrated

    model = load_model("tiny-qwen2", seed=2).model
    ids = torch.tensor([[3, 30, 31, 32, 33, 120, 7, 8]])
    plain = _logits(model, ids)
    with calibrated(model, [], (1, 5)):
        eager = _logits(model, ids)
    torch.testing.assert_close(eager, plain, rtol=1e-5, atol=1e-5)
    assert model.config._attn_implementation == "sdpa"  # restored
    with calibrated(model, [1], (1, 5)) as state:
        _logits(model, ids)
        assert set(state["prior"]) == {1}
        kept = state["prior"][1]  # the queries after the context on the context, alone
        assert kept.shape[-2:] == (ids.shape[1] - 5, 4)
        assert kept.untyped_storage().nbytes() == kept.numel() * kept.element_size()
        state["mode"] = "calibrate"
        changed = _logits(model, ids)  # prior = own attention: w/p = 1, uniform on context
    assert (changed[:, 5:] - plain[:, 5:]).abs().max() > 1e-6
    torch.testing.assert_close(changed[:, :5], plain[:, :5], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("preset", ["tiny-qwen2", "tiny-gemma3"])
def test_calibrate_reads_its_prior_without_the_output_head(preset: str) -> None:
    """The filler pass records the attention only: the output head runs in the scoring
    pass alone, and the scores equal those of a filler pass through the whole model."""
    from lostmid.behaviour.decoding.generate import teacher_forced
    from lostmid.models import load_model
    from lostmid.remedies.base import InferenceBatch
    from lostmid.remedies.catalogue import Calibrate
    from lostmid.remedies.patches import calibrated

    loaded = load_model(preset, seed=1)
    model = loaded.model
    prompts = [[3, *range(30, 50), 120, 7], [4, *range(60, 75), 121, 9]]
    targets, regions = [[8, 9], [10]], [(1, 21), (1, 16)]
    batch = InferenceBatch(prompts, targets, regions, 2, None, None)
    head = loaded.adapter.lm_head(model)
    calls: list[int] = []
    hook = head.register_forward_hook(lambda module, args, out: calls.append(out.shape[-2]))
    try:
        scores = Calibrate().score(model, batch)
    finally:
        hook.remove()
    assert len(calls) == len(prompts)  # one scoring pass an example, no filler logits
    layers = len(loaded.adapter.blocks(model))
    for k, (prompt, target, region) in enumerate(zip(prompts, targets, regions, strict=True)):
        sequence = prompt + target[:-1]
        filler = sequence[: region[0]] + [2] * (region[1] - region[0]) + sequence[region[1] :]
        with calibrated(model, list(range(layers // 2, layers)), region) as state:
            with torch.no_grad():
                model(input_ids=torch.tensor([filler]))  # the whole model, head and all
            state["mode"] = "calibrate"
            one = teacher_forced(model, [prompt], [target], batch_size=1)
        assert scores.logprob[k] == one.logprob[0] and scores.argmax[k] == one.argmax[0]


def test_on_a_cpu_a_remedy_reads_one_prompt_a_forward() -> None:
    """Prompts of different lengths, not padded into a batch on a CPU (where padding
    costs more than it saves): one forward a prompt, the batch's scores."""
    from lostmid.behaviour.decoding.generate import teacher_forced
    from lostmid.models import load_model
    from lostmid.remedies.base import InferenceBatch
    from lostmid.remedies.registry import get_remedy

    model = load_model("tiny-qwen2", seed=1).model
    prompts = [[3, *range(30, 30 + n), 7] for n in (12, 15, 9)]
    targets = [[8, 9], [10], [11, 12]]
    batch = InferenceBatch(prompts, targets, [(1, 10)] * 3, 2, None, None)
    rows: list[int] = []
    hook = model.register_forward_hook(lambda m, args, kwargs, out: rows.append(
        kwargs["input_ids"].shape[0]), with_kwargs=True)  # fmt: skip
    try:
        scores = get_remedy("baseline").score(model, batch)
    finally:
        hook.remove()
    assert rows == [1, 1, 1]
    padded = teacher_forced(model, prompts, targets, batch_size=8)
    np.testing.assert_allclose(scores.logprob, padded.logprob, rtol=1e-5)
    assert list(scores.argmax) == list(padded.argmax)


def _runs(outcomes: list[list[int]], seed: int = 0) -> dict[str, object]:
    """A per-seed inference record holding per-example outcomes (items x positions)."""
    positions = [0, 1, 2, 3, 4]
    items = [i for _ in positions for i in range(len(outcomes))]
    where = [p for p in positions for _ in outcomes]
    right = [bool(outcomes[i][p]) for p in positions for i in range(len(outcomes))]
    acc = [sum(o[p] for o in outcomes) / len(outcomes) for p in positions]
    return {
        "seed": seed,
        "positions": positions,
        "n": [len(outcomes)] * 5,
        "accuracy": acc,
        "mean_accuracy": sum(acc) / 5,
        "gap": max(acc) - min(acc),
        "primacy": acc[0] - acc[2],
        "recency": acc[4] - acc[2],
        "items": items,
        "example_positions": where,
        "correct": right,
    }


def test_inference_remedies_on_one_seed_are_judged_paired_by_example() -> None:
    """A pretrained model scores one seed's examples: pairing by seed would leave every
    interval infinite (one seed), pairing by item decides. Constructed outcomes: a remedy
    that fixes the middle of every item works; one that changes nothing does not work;
    one that fixes as many items as it breaks, on few items, is inconclusive."""
    from lostmid.remedies.registry import get_remedy
    from lostmid.remedies.summary import summarise_runs

    u_shape = [[1, 0, 0, 0, 1] if i % 3 else [1, 1, 0, 1, 1] for i in range(30)]
    base = [_runs(u_shape)]
    fixed = [_runs([[1, 1, 1, 1, 1]] * 30)]
    remedy = get_remedy("query-aware")
    works = summarise_runs(remedy, fixed, base)
    assert works.verdict == "works"
    assert works.differences is not None and works.differences["gap"].ci_high < 0
    assert works.differences["mean_accuracy"].n == 30  # items, not seeds
    same = summarise_runs(remedy, [_runs(u_shape)], base)
    assert same.verdict == "does not work"
    half = [[1, 0, 0, 0, 1]] * 3 + [[1, 1, 1, 1, 1]] * 3
    swapped = half[3:] + half[:3]  # fixes the three items the baseline missed, breaks three
    unsure = summarise_runs(remedy, [_runs(swapped)], [_runs(half)])
    assert unsure.verdict == "inconclusive"


def test_ms_poe_on_gemma3_rescales_each_layer_types_own_rope_table() -> None:
    """Gemma 3 keeps two RoPE tables (sliding base 1e4, global base 1e6) and no
    ``inv_freq``: each layer's rotation is rebuilt from its own table, so a uniform ratio
    equals a copy with both tables divided, and ratio 1 is the model itself."""
    from lostmid.models import load_model
    from lostmid.remedies.patches import ms_poe, rotary_tables

    model = load_model("tiny-gemma3", seed=0).model
    rotary = model.model.rotary_emb
    assert len(rotary_tables(rotary)) == 2
    kv = model.config.num_key_value_heads
    ids = torch.tensor([[5, 17, 3, 250, 9, 9, 41, 77, 2, 130, 8, 21]])
    plain = _logits(model, ids)
    with ms_poe(model, ratios=[1.0] * kv):
        same = _logits(model, ids)
    torch.testing.assert_close(same, plain, rtol=1e-5, atol=1e-5)
    reference = copy.deepcopy(model)
    for name, buffer in reference.model.rotary_emb.named_buffers(recurse=False):
        if name.endswith("_inv_freq") and "original" not in name:
            buffer.div_(1.5)
    with ms_poe(model, ratios=[1.5] * kv):
        scaled = _logits(model, ids)
    torch.testing.assert_close(scaled, _logits(reference, ids), rtol=1e-5, atol=1e-5)
    assert (scaled - plain).abs().max() > 1e-4


def test_inference_remedies_on_a_needle_task_with_a_chat_template(
    tmp_path: Path, chat_model_dir: Path
) -> None:
    """A needle variant through a chat template: the examples are retrieve's (same
    prompts), the answer prefix starts the assistant's turn, query-aware asks before the
    haystack too (within the same --length: less haystack), and every arm scores the same
    items at every depth (the pairing the summary's bootstrap needs)."""
    from lostmid.behaviour.decoding.prompts import encode, prompt_format
    from lostmid.behaviour.decoding.tokenizers import load_tokenizer
    from lostmid.behaviour.retrieve.examples import retrieval_examples
    from lostmid.remedies.inference import retrieve_config
    from lostmid.remedies.registry import get_remedy

    config = RemediesConfig(
        remedies=("query-aware", "calibrate"),
        model=str(chat_model_dir),
        task="niah-multikey",
        length=600,
        distractors=1,
        examples=2,
        seeds=1,
    )
    result = run_remedies(config, out=tmp_path)
    stages = tmp_path / "stages"
    plain = json.loads((stages / "inference-baseline-seed0.json").read_text())["result"]
    aware = json.loads((stages / "inference-query-aware-seed0.json").read_text())["result"]
    assert plain["positions"] == [0, 25, 50, 75, 100]
    assert (
        plain["items"] == aware["items"]
        and plain["example_positions"] == aware["example_positions"]
    )
    fmt = plain["prompt_format"]
    assert fmt["applied"] and fmt["prefix_in_answer"]
    assert "<|assistant|>The special magic number for " in fmt["rendered_example"]
    tok = load_tokenizer(str(chat_model_dir))
    chat = prompt_format("auto", tok)
    examples, _ = retrieval_examples(retrieve_config(config, get_remedy("baseline"), 0), tok, chat)
    ids = encode(examples, tok, chat).prompts
    assert plain["prompt_tokens"] == pytest.approx(sum(map(len, ids)) / len(ids))
    question = "What are all the special magic numbers for"
    assert plain["prompt_format"]["rendered_example"].count(question) == 1
    assert aware["prompt_format"]["rendered_example"].count(question) == 2
    assert aware["prompt_tokens"] <= 600 and plain["prompt_tokens"] <= 600  # equal budgets
    calibrate = result.by_name("calibrate", "inference")
    assert calibrate.differences is not None
    assert calibrate.differences["mean_accuracy"].n == 2  # items, paired


def test_a_learnt_lead_in_reaches_every_arm(tmp_path: Path, chat_model_dir: Path) -> None:
    """--lead-in learn: the arms learn it from the unpatched model's pilot replies and
    record it; the examples each scores end with it (the same text in every arm). The
    pilot is read once for the arms whose prompts agree (baseline and Ms-PoE), once
    more for query-aware's (the question stated twice)."""
    config = RemediesConfig(
        remedies=("ms-poe", "query-aware"),
        model=str(chat_model_dir),
        task="niah-multikey",
        length=600,
        distractors=1,
        examples=1,
        seeds=1,
        lead_in="learn",
    )
    run_remedies(config, out=tmp_path)
    stages = tmp_path / "stages"
    arms = [
        json.loads((stages / f"inference-{n}-seed0.json").read_text())["result"]
        for n in ("baseline", "ms-poe")
    ]
    leads = [a["lead_in"] for a in arms]
    assert leads[0] == leads[1] and leads[0]["pilot_items"] > 0
    pilots = sorted((tmp_path / "pilots" / "stages").glob("pilot-lead-in-*.json"))
    assert len(pilots) == 2  # one for baseline and Ms-PoE, one for query-aware
    assert arms[0]["prompt_format"]["rendered_example"].endswith(leads[0]["text"])
    assert "lead_in" in config.record() and "lead_in" not in RemediesConfig().record()


def test_the_inference_remedies_reach_a_family_found_by_discovery(tmp_path) -> None:
    """OLMo has no adapter of its own; discovery places it as llama-style (the models'
    tests). The remedies ask the built model for its adapter, so Ms-PoE and the
    calibration reach it: with model_type's adapter alone, Ms-PoE said it had no rotary
    positions and the calibration found no blocks."""
    import json

    from transformers import AutoConfig

    from lostmid.models import load_model
    from lostmid.remedies.patches import calibrated, ms_poe

    config = AutoConfig.for_model(
        "olmo", vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=64, pad_token_id=0, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config.to_dict()))
    model = load_model(str(tmp_path), seed=0).model
    ids = torch.tensor([[5, 17, 3, 25, 9, 9, 41, 7, 2, 13]])
    plain = _logits(model, ids)
    with ms_poe(model, ratios=[1.0, 1.0, 1.0, 1.0]):
        torch.testing.assert_close(_logits(model, ids), plain, rtol=1e-5, atol=1e-5)
    reference = copy.deepcopy(model)
    reference.model.rotary_emb.inv_freq.div_(1.5)
    with ms_poe(model, ratios=[1.5] * 4):
        torch.testing.assert_close(
            _logits(model, ids), _logits(reference, ids), rtol=1e-5, atol=1e-5
        )
    with calibrated(model, [1], (1, 5)) as state:
        _logits(model, ids)
        assert set(state["prior"]) == {1}

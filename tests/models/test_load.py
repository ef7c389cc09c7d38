"""Loading models: presets, directories, hub ids, seeds and every user-facing error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lostmid.errors import UserError
from lostmid.models import MODEL_PRESETS, load_model, parse_device_map
from lostmid.models.load import _preset_config


def test_required_presets_have_the_paper_shapes() -> None:
    assert {"qwen2-0.5b", "gpt2", "gpt2-medium", "tiny-qwen2", "tiny-gpt2"} <= set(MODEL_PRESETS)
    qwen = _preset_config("qwen2-0.5b")
    assert (qwen.num_hidden_layers, qwen.hidden_size, qwen.intermediate_size) == (24, 896, 4864)
    assert (qwen.num_attention_heads, qwen.num_key_value_heads) == (14, 2)
    assert qwen.rope_parameters["rope_theta"] == 1e6
    gpt2, medium = _preset_config("gpt2"), _preset_config("gpt2-medium")
    assert (gpt2.num_hidden_layers, gpt2.hidden_size, gpt2.max_position_embeddings) == (
        12,
        768,
        1024,
    )
    assert (medium.num_hidden_layers, medium.hidden_size) == (24, 1024)


@pytest.mark.parametrize(
    ("spec", "family", "adapter"),
    [
        ("tiny-qwen2", "qwen2", "llama-style"),
        ("tiny-gpt2", "gpt2", "gpt2"),
        ("tiny-llama", "llama", "llama-style"),
        ("tiny-mistral", "mistral", "llama-style"),
        ("tiny-gemma2", "gemma2", "gemma2"),
        ("tiny-neox", "gpt_neox", "gpt-neox"),
        ("tiny-opt", "opt", "opt"),
        ("tiny-bloom", "bloom", "bloom"),
        ("tiny-phi", "phi", "phi"),
    ],
)
def test_tiny_presets_load_frozen_in_eval_mode(spec: str, family: str, adapter: str) -> None:
    loaded = load_model(spec)
    assert (loaded.family, loaded.adapter.name, loaded.num_layers, loaded.hidden_size) == (
        family,
        adapter,
        2,
        32,
    )
    assert not loaded.model.training
    assert not any(p.requires_grad for p in loaded.model.parameters())
    assert len(loaded.adapter.blocks(loaded.model)) == loaded.num_layers


def test_seed_determines_the_random_init() -> None:
    def weights(seed: int) -> torch.Tensor:
        return load_model("tiny-qwen2", seed=seed).model.model.layers[0].mlp.up_proj.weight

    assert torch.equal(weights(3), weights(3))
    assert not torch.equal(weights(3), weights(4))


def test_config_overrides_change_the_shape_and_reject_unknown_fields() -> None:
    assert load_model("tiny-qwen2", config_overrides={"num_hidden_layers": 3}).num_layers == 3
    with pytest.raises(UserError, match="'not_a_field' is not a field of the qwen2 config"):
        load_model("tiny-qwen2", config_overrides={"not_a_field": 1})


def test_directory_with_config_only_builds_untrained(tmp_path) -> None:
    config = {k: v for k, v in MODEL_PRESETS["tiny-gpt2"].items() if not k.startswith("_")}
    (tmp_path / "config.json").write_text(json.dumps(config))
    loaded = load_model(str(tmp_path), seed=1)
    assert (loaded.source, loaded.init, loaded.family) == ("directory", "random", "gpt2")
    with pytest.raises(UserError, match="no weights found; use --init random"):
        load_model(str(tmp_path), init="pretrained")


def test_directory_with_weights_loads_them(tmp_path) -> None:
    original = load_model("tiny-qwen2", seed=7).model
    original.save_pretrained(tmp_path)
    loaded = load_model(str(tmp_path), init="auto", seed=0)
    assert loaded.init == "pretrained"
    w0 = original.model.layers[1].self_attn.q_proj.weight
    assert torch.equal(loaded.model.model.layers[1].self_attn.q_proj.weight, w0)
    # --init random ignores the weights: a fresh model under the seed.
    fresh = load_model(str(tmp_path), init="random", seed=0)
    assert not torch.equal(fresh.model.model.layers[1].self_attn.q_proj.weight, w0)


def test_unknown_preset_lists_the_presets() -> None:
    with pytest.raises(UserError, match="unknown model preset 'qwen9'; presets: .*tiny-qwen2"):
        load_model("qwen9")


def test_missing_path_is_named(tmp_path) -> None:
    with pytest.raises(UserError, match="no such directory"):
        load_model(str(tmp_path / "absent") + "/")
    with pytest.raises(UserError, match="no config.json in that directory"):
        load_model(str(tmp_path))


def test_uncached_hub_id_offline_says_so(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", "/nonexistent-lostmid-cache")
    with pytest.raises(
        UserError, match="not in the local Hugging Face cache and the hub is offline"
    ):
        load_model("lostmid-test/absent-model")


def test_bad_options_are_one_line_errors() -> None:
    with pytest.raises(UserError, match="--init 'trained' unknown"):
        load_model("tiny-qwen2", init="trained")
    with pytest.raises(UserError, match="--dtype 'int8' unknown"):
        load_model("tiny-qwen2", dtype="int8")
    with pytest.raises(UserError, match="a preset holds only the architecture"):
        load_model("tiny-qwen2", init="pretrained")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on CPU-only machines")
def test_cuda_unavailable_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="CUDA is not available on this machine; use --device cpu"):
        load_model("tiny-qwen2", device="cuda")


def test_float64_and_bfloat16_dtypes() -> None:
    assert (
        load_model("tiny-gpt2", dtype="float64").model.transformer.h[0].attn.c_attn.weight.dtype
        == torch.float64
    )
    assert load_model("tiny-gpt2", dtype="bfloat16").model.lm_head.weight.dtype == torch.bfloat16


def test_no_alibi_flag_is_applied_and_recorded() -> None:
    """Equal inputs with large q.k: ALiBi alone makes layer-1 attention non-uniform."""
    rows = {}
    for flag in (False, True):
        loaded = load_model("tiny-bloom", no_alibi=flag, dtype="float64")
        assert loaded.describe()["no_alibi"] is flag
        adapter, block = loaded.adapter, loaded.adapter.blocks(loaded.model)[0]
        with torch.no_grad():
            for tensor in adapter.query_key(block):
                tensor.mul_(20.0)
        kept = {}
        handle = adapter.attention(block).register_forward_hook(
            lambda m, a, o, kept=kept: kept.update(w=o[1])
        )
        with torch.no_grad():
            adapter.base(loaded.model)(input_ids=torch.full((1, 8), 5), use_cache=False)
        handle.remove()
        rows[flag] = kept["w"][0, :, -1]  # (heads, L): the last position's attention row
    assert torch.allclose(rows[True], torch.full_like(rows[True], 1 / 8), rtol=0, atol=1e-6)
    assert (rows[False] - 1 / 8).abs().max() > 1e-2


# --- device maps (accelerate): split or offload, and the probes still flow through ---


def _profile(loaded, seed: int = 3):
    from lostmid.influence import influence_profile, random_token_ids

    ids = random_token_ids(loaded.vocab_size, 2, 10, seed=0)
    return influence_profile(loaded, ids, probes=2, seed=seed, per_layer=True)


def test_offloaded_random_model_gives_the_same_profile(tmp_path) -> None:
    plain = load_model("tiny-qwen2", seed=5, attn_implementation="eager")
    # A CPU budget below the model's size: accelerate sends what does not fit to disk.
    offloaded = load_model(
        "tiny-qwen2",
        seed=5,
        attn_implementation="eager",
        device_map="auto",
        max_memory={"cpu": 80_000},  # of 108 kB
        offload_folder=tmp_path / "offload",
    )
    on_disk = [name for name, device in offloaded.device_map.items() if device == "disk"]
    assert on_disk, offloaded.device_map
    assert any((tmp_path / "offload").iterdir())  # the weights really are on disk
    meta = [p for p in offloaded.model.parameters() if p.device.type == "meta"]
    assert meta  # and not in the model until a forward brings them in
    assert offloaded.input_device == torch.device("cpu")
    assert offloaded.describe()["device_map"] == dict(offloaded.device_map)
    a, b = _profile(plain), _profile(offloaded)
    np.testing.assert_allclose(b.mean_sq, a.mean_sq, rtol=1e-5)
    np.testing.assert_allclose(b.per_layer, a.per_layer, rtol=1e-5)


def test_explicit_map_offloads_pretrained_weights_and_keeps_the_profile(tmp_path) -> None:
    original = load_model("tiny-gpt2", seed=2, no_pos_emb=False)
    original.model.save_pretrained(tmp_path / "weights")
    device_map = json.dumps({"transformer.h.1": "disk", "": "cpu"})
    offloaded = load_model(
        str(tmp_path / "weights"),
        init="pretrained",
        device_map=device_map,
        offload_folder=tmp_path / "offload",
    )
    # The root entry is spread over the modules beside the offloaded one.
    assert offloaded.device_map["transformer.h.1"] == "disk"
    assert set(offloaded.device_map.values()) == {"cpu", "disk"}
    assert "" not in offloaded.device_map
    block = offloaded.model.transformer.h[1]
    assert all(p.device.type == "meta" for p in block.parameters())
    np.testing.assert_allclose(_profile(offloaded).mean_sq, _profile(original).mean_sq, rtol=1e-5)
    # Ablations act on weights: a built model is ablated before it is offloaded ...
    wpe_on_disk = {"transformer.wpe": "disk", "": "cpu"}
    plain = load_model("tiny-gpt2", seed=2, no_pos_emb=True)
    ablated = load_model("tiny-gpt2", seed=2, no_pos_emb=True, device_map=wpe_on_disk)
    np.testing.assert_allclose(_profile(ablated).mean_sq, _profile(plain).mean_sq, rtol=1e-5)
    # ... but offloaded pretrained weights cannot be zeroed: said, not ignored.
    with pytest.raises(UserError, match="--no-pos-emb cannot zero offloaded weights"):
        load_model(
            str(tmp_path / "weights"), init="pretrained", no_pos_emb=True, device_map=wpe_on_disk
        )


def test_offload_without_a_folder_uses_a_temporary_one_that_goes_with_the_model() -> None:
    import gc
    import tempfile

    def folders() -> set[Path]:
        return set(Path(tempfile.gettempdir()).glob("lostmid-offload-*"))

    before = folders()
    loaded = load_model("tiny-qwen2", device_map={"model.layers.0": "disk", "": "cpu"})
    (folder,) = folders() - before
    assert (folder / "index.json").is_file()
    assert loaded.device_map["model.layers.0"] == "disk"
    del loaded
    gc.collect()
    assert not folder.exists()


def test_device_map_text_is_parsed_and_bad_maps_are_one_line_errors() -> None:
    assert parse_device_map("auto") == "auto"
    assert parse_device_map('{"model": "cuda:1", "lm_head": "cuda", "x": 2}') == {
        "model": 1,
        "lm_head": 0,
        "x": 2,
    }
    cases = [
        ("[0, 1]", "got a list"),
        ("{}", "got an empty object"),
        ("fastest", "'fastest' is neither auto, balanced nor JSON"),
        ('{"model": "tpu"}', r"puts model on 'tpu', not a device; use a GPU index, cuda:N"),
        ('{"model": -1}', "puts model on -1, not a device"),
        ('{"model": true}', "puts model on True, not a device"),
    ]
    for text, message in cases:
        with pytest.raises(UserError, match=message):
            parse_device_map(text)


def test_device_maps_are_checked_against_the_model() -> None:
    with pytest.raises(UserError, match=r"names 'model.blocks', not a module of tiny-qwen2"):
        load_model("tiny-qwen2", device_map={"model.blocks": "cpu", "": "cpu"})
    with pytest.raises(UserError, match="gives no device to some parameters"):
        load_model("tiny-qwen2", device_map={"model.layers": "cpu"})
    with pytest.raises(UserError, match="puts the whole model on disk"):
        load_model("tiny-qwen2", device_map="auto", max_memory={"cpu": 1000})


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on CPU-only machines")
def test_gpus_in_a_map_or_device_without_cuda_are_clear_errors() -> None:
    with pytest.raises(UserError, match="on cuda:0 but CUDA is not available on this machine"):
        load_model("tiny-qwen2", device_map={"": 0})
    with pytest.raises(UserError, match="CUDA is not available on this machine; use --device cpu"):
        load_model("tiny-qwen2", device="cuda", device_map="auto")


def test_device_map_without_accelerate_says_how_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "accelerate", None)  # import accelerate fails
    with pytest.raises(UserError, match=r"needs accelerate.*pip install 'lostmid\[big\]'"):
        load_model("tiny-qwen2", device_map="auto")


def test_measure_command_takes_a_device_map(tmp_path, monkeypatch, capsys) -> None:
    from typer.testing import CliRunner

    from lostmid.cli import app, main

    out = tmp_path / "m"
    args = ["measure", "--model", "tiny-qwen2", "-L", "8", "--samples", "2", "--out", str(out)]
    offload = '{"model.layers.1": "disk", "": "cpu"}'
    result = CliRunner().invoke(app, [*args, "--device-map", offload])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "measure.json").read_text())
    assert record["config"]["device_map"]["model.layers.1"] == "disk"
    assert record["requested"]["device_map"] == offload
    monkeypatch.setattr(sys, "argv", ["lostmid", *args, "--overwrite", "--device-map", "[1]"])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "--device-map wants auto, balanced or JSON" in err and "\n" not in err

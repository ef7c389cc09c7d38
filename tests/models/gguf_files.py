"""Tiny GGUF files the tests write themselves (the ``gguf`` package's writer).

:func:`write_tiny_llama_gguf` turns a tiny random Llama (built from the ``tiny-llama``
preset) into a llama.cpp-style GGUF file: llama.cpp's tensor names, q/k weights
permuted as its converter does (transformers undoes the permutation on reading), a
byte-level BPE tokenizer of 256 tokens, and a chat template. Loading it back must give
the same logits as the model it came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from lostmid.models import load_model

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's q/k permutation (convert_hf_to_gguf.py's ``permute``)."""
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def _byte_tokens() -> list[str]:
    """The GPT-2 byte-to-unicode alphabet: token i is the character for byte i."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    table = dict(zip(printable, chars, strict=True))
    return [chr(table[b]) for b in range(256)]


def write_tiny_llama_gguf(
    path: Path,
    *,
    seed: int = 0,
    architecture: str = "llama",
    chat_template: str | None = CHAT_TEMPLATE,
    metadata: dict[str, Any] | None = None,
) -> torch.nn.Module:
    """Write a tiny Llama as GGUF (float32 tensors) and return the torch model it holds;
    ``metadata`` (a writer method's name -> the value it writes instead) damages it."""
    import gguf

    class Writer(gguf.GGUFWriter):
        pass

    for method, value in (metadata or {}).items():
        base = getattr(gguf.GGUFWriter, method)
        setattr(Writer, method, lambda self, *_, _b=base, _v=value: _b(self, _v))

    model = load_model("tiny-llama", seed=seed).model
    config = model.config
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    writer = Writer(str(path), architecture)
    writer.add_name("tiny test llama")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_freq_base(float(config.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(float(config.rms_norm_eps))
    writer.add_vocab_size(config.vocab_size)
    writer.add_tokenizer_model("gpt2")
    tokens = _byte_tokens()[: config.vocab_size]
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types([1] * len(tokens))
    writer.add_token_merges([])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    if chat_template is not None:
        writer.add_chat_template(chat_template)
    names = {
        "model.embed_tokens.weight": "token_embd.weight",
        "model.norm.weight": "output_norm.weight",
    }
    per_layer = {
        "input_layernorm.weight": "attn_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight",
        "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight",
        "self_attn.o_proj.weight": "attn_output.weight",
        "post_attention_layernorm.weight": "ffn_norm.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight",
        "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight",
    }
    for layer in range(config.num_hidden_layers):
        for hf, cpp in per_layer.items():
            names[f"model.layers.{layer}.{hf}"] = f"blk.{layer}.{cpp}"
    state = model.state_dict()
    for hf, cpp in names.items():
        array = state[hf].detach().float().numpy().copy()
        if hf.endswith("q_proj.weight"):
            array = _permute(array, heads)
        elif hf.endswith("k_proj.weight"):
            array = _permute(array, kv_heads)
        writer.add_tensor(cpp, array)
    if not config.tie_word_embeddings:
        writer.add_tensor("output.weight", state["lm_head.weight"].float().numpy().copy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model

"""Fixtures: a tiny local BPE tokenizer saved with a tiny model built from a config."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from lostmid.behaviour.kv import kv_example
from lostmid.behaviour.niah import REPEAT_SENTENCES


def _training_text() -> list[str]:
    texts = [kv_example(seed=9, index=i, pairs=4, gold_index=0).prompt for i in range(30)]
    return texts + list(REPEAT_SENTENCES) * 5


@pytest.fixture(scope="session")
def bpe_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with a 400-token byte-level BPE tokenizer trained here and a 2-layer
    qwen2 model (random weights) whose vocabulary matches it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("bpe-model")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<pad>"],
        show_progress=False,
    )
    tok.train_from_iterator(_training_text(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>")
    fast.save_pretrained(folder)
    config = Qwen2Config(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Qwen2ForCausalLM(config).save_pretrained(folder)
    return folder

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


CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|user|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture(scope="session")
def chat_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Like ``bpe_model_dir``, with an instruct model's tokenizer: BOS added to every
    encoding (``<s> $A``), an EOS ``</s>`` the model's config stops at, and a chat
    template (``<s><|user|>...<|end|><|assistant|>``). Its weights are drawn large and
    untied, so that its greedy answers differ from example to example."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("chat-model")
    specials = ["<pad>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=specials,
        show_progress=False,
    )
    tok.train_from_iterator(_training_text(), trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", bos)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    config = Qwen2Config(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=1024,
        tie_word_embeddings=False,
        initializer_range=0.5,  # answers that vary with the context (lm-eval test)
        bos_token_id=bos,
        eos_token_id=tok.token_to_id("</s>"),
        pad_token_id=tok.token_to_id("<pad>"),
    )
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Qwen2ForCausalLM(config).save_pretrained(folder)
    return folder

"""Shared test helpers."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lostmid.behaviour.tasks.kv import kv_example
from lostmid.behaviour.tasks.niah import REPEAT_SENTENCES


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``make test`` runs ``-n 2`` on a 2-core box) each worker
    process gets one torch thread, so that the workers share the cores instead of
    fighting over them; a test that asks for threads sets them itself."""
    import os

    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def one_job_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stages and sweep units run in the test's own process unless a test asks for
    worker processes (``jobs=2``): monkeypatched functions reach them, and a spawned
    worker's torch import does not slow every test."""
    import lostmid.runs.backend as backend

    monkeypatch.setattr(backend, "default_jobs", lambda: 1)


@pytest.fixture(scope="session", autouse=True)
def model_code_apart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where transformers copies a model folder's own code when a test lets it run
    (``--trust-remote-code``): one folder of the session's, not the user's cache, and the
    same one for every test of a process (the package it imports the code as,
    ``transformers_modules``, is imported once and keeps its first folder)."""
    import os

    import transformers.dynamic_module_utils as dynamic

    folder = tmp_path_factory.mktemp("hf-modules")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_MODULES_CACHE", str(folder))
        patch.setattr(dynamic, "HF_MODULES_CACHE", str(folder))
        patch.syspath_prepend(str(folder))
        assert os.environ["HF_MODULES_CACHE"] == str(folder)
        yield folder


@pytest.fixture(scope="session", autouse=True)
def stage_costs_apart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Stage costs that tests' runs remember go to a file of the session's, not to the
    user's cache (lostmid.runs.eta)."""
    import lostmid.runs.eta as eta

    path = tmp_path_factory.mktemp("stage-costs") / eta.COSTS_FILE
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(eta, "costs_path", lambda: path)
        yield


@pytest.fixture
def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    """Run ``lostmid ARGS`` in-process through the real entry point; return
    (exit code, stdout, stderr)."""
    from lostmid.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["lostmid", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def unknown_family_dir(tmp_path: Path) -> Path:
    """A directory with only the config.json of a tiny GPT-J, a family no adapter
    serves and no layout fits (one shared norm, GPT-2 names): the generic adapter."""
    from transformers import AutoConfig

    config = AutoConfig.for_model(
        "gptj",
        vocab_size=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=64,
        rotary_dim=4,
        bos_token_id=0,
        eos_token_id=0,
    )
    (tmp_path / "config.json").write_text(json.dumps(config.to_dict()))
    return tmp_path


@pytest.fixture
def made_dose_run() -> Any:
    """``made_dose_run(layers, seed, S, B, final=1.0, variant="base")``: a hand-made
    :class:`lostmid.behaviour.dose.summary.DoseRun` whose readouts are known by construction."""
    import numpy as np

    from lostmid.behaviour.dose.summary import BASE, DoseRun

    records = 4
    tokens = tuple(float(t) for t in range(0, 10001, 100))

    def made_run(
        layers: int,
        seed: int,
        structural: float,
        order: float,
        *,
        final: float = 1.0,
        variant: str = BASE,
        first_time: float = 800.0,
    ) -> DoseRun:
        """A run whose record influence at init falls as exp(-S x) (so S = ``structural``)
        and whose record r reaches half its final accuracy at T(r) = first_time exp(B x_r)
        (so B = ``order`` exactly): each accuracy curve is a linear ramp, 0.5 final at T(r),
        wide enough to be linear between the checkpoints that bracket T(r)."""
        x = np.linspace(0.0, 1.0, records)
        influence = np.exp(-structural * x)
        times = first_time * np.exp(order * x)
        if times.min() < 400 or times.max() + 400 > tokens[-1]:
            raise ValueError("the ramps must lie inside the checkpoints: smaller |B|")
        t = np.asarray(tokens)[:, None]
        accuracy = final * np.clip((t - times[None, :]) / 800.0 + 0.5, 0.0, 1.0)  # (K, P)
        return DoseRun(
            layers=layers,
            variant=variant,
            seed=seed,
            tokens=tokens,
            accuracy=tuple(tuple(row) for row in accuracy.tolist()),
            probability=None,
            influence_init=tuple(influence.tolist()),
            eta_init=tuple((influence * 2).tolist()),
            rho_init=tuple(influence.tolist()),
            cpu_seconds=10.0 * layers,
            wall_seconds=20.0 * layers,
            folder="",
        )

    return made_run


# -- model directories with a tokenizer trained here (retrieval, remedies, prompts) --


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

"""Hostile and damaged inputs for the fault tests, built from tiny models (nothing
downloaded), and the check every refusal must pass (:func:`assert_one_line`)."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path


def evil_pickle(marker: Path, payload: object | None = None) -> bytes:
    """A pickle that plain ``pickle.load`` (or ``torch.load(weights_only=False)``) would
    answer by running ``touch MARKER`` through ``os.system``."""

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    return pickle.dumps({"step": 3, "model": Evil(), "payload": payload}, protocol=2)


PLANTED = (
    "with open({marker!r}, 'w') as _marker:\n"
    "    _marker.write('code from the model directory ran')\n"
)


def build_hostile(root: Path) -> dict[str, Path]:
    """Every damaged or hostile input, by name, under ``root``:

    * ``evil_bin``: a model directory whose ``pytorch_model.bin`` is a pickle calling
      ``os.system``; ``evil_resume``: the same as a ``resume.pt``;
    * ``truncated``: a model directory whose ``model.safetensors`` is cut in half;
    * ``custom_code``: a model directory whose ``config.json`` ``auto_map`` names
      ``modeling_evil.py`` / ``configuration_evil.py`` (planted: they write the marker
      when imported, then define a working Qwen2 model, so that code that does run
      would go on quietly); ``custom_tokenizer``: a tokenizer directory naming its own
      tokenizer class the same way;
    * ``measure_json``, ``theory_json``, ``gpt2_measure_json``: real results, for
      putting in the wrong place; ``garbage_json``, ``binary``, ``json_list``,
      ``empty``: files that are not results;
    * ``marker``: the file planted code would create.
    """
    from lostmid.influence.config import MeasureConfig
    from lostmid.influence.run import run_measure
    from lostmid.models import load_model
    from lostmid.models.load import resolve_config
    from lostmid.theory.run import TheoryConfig, run_theory

    root.mkdir(parents=True, exist_ok=True)
    marker = root / "MARKER"
    config = resolve_config("tiny-qwen2").to_dict()
    found = {"marker": marker}

    evil = root / "evil_bin"
    evil.mkdir()
    (evil / "config.json").write_text(json.dumps(config))
    (evil / "pytorch_model.bin").write_bytes(evil_pickle(marker))
    found["evil_bin"] = evil
    found["evil_resume"] = root / "evil_resume.pt"
    found["evil_resume"].write_bytes(evil_pickle(marker))

    truncated = root / "truncated"
    load_model("tiny-qwen2").model.save_pretrained(truncated)
    weights = truncated / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    found["truncated"] = truncated

    code = root / "custom_code"
    code.mkdir()
    auto = {
        "AutoConfig": "configuration_evil.EvilConfig",
        "AutoModelForCausalLM": "modeling_evil.EvilModel",
    }
    (code / "config.json").write_text(json.dumps({**config, "auto_map": auto}))
    planted = PLANTED.format(marker=str(marker))
    (code / "configuration_evil.py").write_text(
        planted + "from transformers import Qwen2Config\n\n\n"
        "class EvilConfig(Qwen2Config):\n    pass\n"
    )
    (code / "modeling_evil.py").write_text(
        planted + "from transformers import Qwen2ForCausalLM\n\n\n"
        "class EvilModel(Qwen2ForCausalLM):\n    pass\n"
    )
    found["custom_code"] = code

    tok = root / "custom_tokenizer"
    tok.mkdir()
    (tok / "tokenizer_config.json").write_text(
        json.dumps({"auto_map": {"AutoTokenizer": ["tokenization_evil.EvilTokenizer", None]}})
    )
    (tok / "tokenization_evil.py").write_text(planted)
    found["custom_tokenizer"] = tok

    for name, model in (("measure_json", "tiny-qwen2"), ("gpt2_measure_json", "tiny-gpt2")):
        out = root / name
        run_measure(MeasureConfig(model=model, length=16, samples=2, probes=1), out=out)
        found[name] = out / "measure.json"
    run_theory(TheoryConfig(layers=2, length=16), out=root / "theory")
    found["theory_json"] = root / "theory" / "theory.json"
    for name, data in (
        ("garbage_json", b'{"influence": [1, 2,'),
        ("binary", bytes(range(256))),
        ("json_list", b"[1, 2, 3]"),
        ("empty", b""),
    ):
        found[name] = root / f"{name}.json"
        found[name].write_bytes(data)
    return found


def assert_one_line(code: int, out: str, err: str, *words: str) -> str:
    """Exit 2, one line on stderr, no traceback anywhere, the line holding ``words``."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, out[-500:], err[-2000:])
    assert len(lines) == 1, err
    assert "Traceback" not in out + err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]

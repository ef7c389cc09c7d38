"""The model spec: the one description of a model every loading command builds, and
the one loader call (:meth:`lostmid.models.spec.ModelSpec.load`)."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from lostmid.errors import UserError
from lostmid.models import load_model
from lostmid.models.build import DTYPES
from lostmid.models.load import resolve_config
from lostmid.models.spec import DTYPE_NAMES, NOT_RECORDED, ModelSpec


def test_the_dtype_names_are_the_loaders():
    assert set(DTYPE_NAMES) == set(DTYPES)


def test_options_hold_what_changed_and_read_back():
    spec = ModelSpec(
        "m",
        chat_template="off",
        answer_prefix="off",
        tokenizer="bytes",
        dtype="bfloat16",
        trust_remote_code=True,
        device_map="auto",
        device="cuda",
    )
    options = spec.options()
    assert set(options) == {f.name for f in fields(ModelSpec)} - set(NOT_RECORDED)
    # a record names the model and these; the device is the run's
    back = ModelSpec.from_record({"model": "m", "seed": 3} | options, device="cuda")
    assert back == spec
    assert ModelSpec("m").options() == {}  # a default run's record is what it was


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"dtype": "int3"}, "--dtype"),
        ({"tokenizer": " "}, "--tokenizer"),
        ({"chat_template": "maybe"}, "--chat-template"),
    ],
)
def test_bad_options_are_one_line(kwargs, option):
    with pytest.raises(UserError, match=option):
        ModelSpec("tiny-qwen2", **kwargs)


def test_load_is_load_model_with_the_specs_options():
    spec = ModelSpec("tiny-qwen2", dtype="float64")
    loaded = spec.load(init="random", seed=4, config_overrides={"num_hidden_layers": 1})
    direct = load_model(
        "tiny-qwen2", seed=4, dtype="float64", config_overrides={"num_hidden_layers": 1}
    )
    assert loaded.num_layers == 1
    ours, theirs = loaded.model.state_dict(), direct.model.state_dict()
    assert all(v.dtype == torch.float64 for v in ours.values() if v.is_floating_point())
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)


def _custom_code_model(root: Path) -> Path:
    """A model folder whose config names its own code (a Qwen2 under another class)."""
    folder = root / "custom"
    folder.mkdir()
    config = resolve_config("tiny-qwen2").to_dict()
    auto = {"AutoConfig": "conf.MyConfig", "AutoModelForCausalLM": "modelling.MyModel"}
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": auto}))
    (folder / "conf.py").write_text(
        "from transformers import Qwen2Config\n\n\nclass MyConfig(Qwen2Config):\n    pass\n"
    )
    (folder / "modelling.py").write_text(
        "from transformers import Qwen2ForCausalLM\n\nfrom .conf import MyConfig\n\n\n"
        "class MyModel(Qwen2ForCausalLM):\n    config_class = MyConfig\n"
    )
    return folder


def test_remote_code_runs_only_when_the_spec_allows(tmp_path):
    folder = _custom_code_model(tmp_path)
    with pytest.raises(UserError, match="--trust-remote-code"):
        ModelSpec(str(folder)).load(init="random")
    loaded = ModelSpec(str(folder), trust_remote_code=True).load(init="random")
    assert type(loaded.model).__name__ == "MyModel"  # its own code ran
    assert loaded.num_layers == 2

"""The published layouts of the result files (lostmid.schemas): every kind has one, the
saved studies and a fresh run's files match it (through the JSON Schema itself, read by
an independent validator), and a file that does not is named in one line; a writer that
strays is warned of and its file kept."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import jsonschema
import pytest

from lostmid.errors import UserError
from lostmid.files import RESULT_KINDS
from lostmid.runinfo import write_json
from lostmid.schemas import (
    ResultLayoutWarning,
    json_schema,
    kind_of_tag,
    problems_of,
    schema_file_name,
    validate_result,
)

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "studies"
FILE_KINDS = {"reproduce.json": "reproduce", "retrieve.json": "retrieval"}


def _validator(kind: str) -> jsonschema.protocols.Validator:
    schema = json_schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)  # a valid draft 2020-12 schema
    return cls(schema)


@pytest.mark.parametrize("kind", list(RESULT_KINDS))
def test_every_kind_publishes_a_schema_that_pins_its_tag(kind: str) -> None:
    schema = json_schema(kind)
    tag = schema["properties"]["schema"]
    tags = [tag.get("const")] + [option.get("const") for option in tag.get("anyOf", [])]
    assert RESULT_KINDS[kind].schema in tags
    assert "metadata" in schema["properties"]
    assert schema_file_name(kind).endswith(".schema.json") and " " not in schema_file_name(kind)


def _saved() -> list[tuple[str, Path]]:
    return sorted((FILE_KINDS[p.name], p) for p in STUDIES.rglob("*.json") if p.name in FILE_KINDS)


@pytest.mark.parametrize(("kind", "path"), _saved(), ids=lambda x: str(x).split("studies/")[-1])
def test_the_saved_studies_match_their_published_layout(kind: str, path: Path) -> None:
    document = json.loads(path.read_text())
    assert problems_of(kind, document) is None
    assert list(_validator(kind).iter_errors(document)) == []


def test_the_saved_claims_are_claims() -> None:
    claims = json.loads((STUDIES / "reproduce-default" / "claims.json").read_text())
    schema = json_schema("reproduce")
    validator = jsonschema.Draft202012Validator(
        {"$defs": schema["$defs"], "type": "array", "items": {"$ref": "#/$defs/Claim"}}
    )
    assert claims and list(validator.iter_errors(claims)) == []
    claims[0]["verdict"] = "sort of"  # not a verdict word
    assert list(validator.iter_errors(claims))


def test_a_fresh_theory_file_matches_and_a_changed_one_is_refused_by_name(
    tmp_path: Path,
) -> None:
    from lostmid.theory.run import TheoryConfig, run_theory

    run_theory(TheoryConfig(length=12, layers=2), out=tmp_path)
    document = json.loads((tmp_path / "theory.json").read_text())
    assert kind_of_tag(document) == "theory"
    assert list(_validator("theory").iter_errors(document)) == []

    wrong = {**document, "influence": "a lot"}
    with pytest.raises(UserError, match=r"^t.json: not the layout of a theory result: "
                       r"'influence(\.0)?': .*valid"):  # fmt: skip
        validate_result("theory", wrong, "t.json")
    assert list(_validator("theory").iter_errors(wrong))
    extra = {**document, "surprise": 1}  # a key the layout does not declare
    assert "surprise" in str(problems_of("theory", extra))
    assert list(_validator("theory").iter_errors(extra))
    missing = {k: v for k, v in document.items() if k != "metadata"}
    assert "metadata" in str(problems_of("theory", missing))


def test_a_writer_that_strays_is_warned_and_its_file_kept(tmp_path: Path) -> None:
    stray = {"schema": RESULT_KINDS["dose"].schema, "arms": "not a list"}
    with pytest.warns(ResultLayoutWarning, match="dose.json: written, but not in the pub"):
        write_json(tmp_path / "dose.json", stray)
    assert json.loads((tmp_path / "dose.json").read_text()) == stray  # nothing lost
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an untagged document is not a result: no check
        write_json(tmp_path / "other.json", {"arms": "anything"})


def test_each_writer_with_several_cells_agrees_with_its_strict_layout(
    tmp_path: Path, run_cli, bpe_model_dir: Path
) -> None:
    """The kinds cheap enough to write here, each with more than one cell where it can
    have several (two lengths, two seeds, two units), read back by validate_result in
    strict mode; writing already warns (an error in the suite) on any mismatch. The
    other kinds are held the same way by every test that runs their writer."""
    runs = {
        "theory": (["theory", "--length", "12", "--layers", "2"], "theory.json"),
        "measure": (["measure", "--model", "tiny-qwen2", "--length", "8", "--samples", "2"],
                    "measure.json"),
        "measure/seed1": (["measure", "--model", "tiny-qwen2", "--length", "8", "--samples",
                           "2", "--seed", "1"], "measure.json"),  # a second seed, for compare
        "compare": (["compare", "--measured", str(tmp_path / "measure" / "measure.json"),
                     "--measured", str(tmp_path / "measure-seed1" / "measure.json")],
                    "compare.json"),
        "sweep": (["sweep", "--task", "theory", "--lengths", "8,12"], "sweep.json"),
        "retrieval": (["retrieve", "--model", str(bpe_model_dir), "--task", "niah",
                       "--lengths", "500,300", "--depth", "0,100", "--examples", "1",
                       "--passes", "teacher"], "retrieve.json"),
    }  # fmt: skip
    for kind, (argv, name) in runs.items():
        out = tmp_path / kind.replace("/", "-")
        code, _, err = run_cli(*argv, "--out", out)
        assert code == 0, (kind, err)
        found = sorted(out.rglob(name))
        assert found, kind
        for path in found:
            document = json.loads(path.read_text())
            validate_result(kind.split("/")[0], document, str(path))
            if kind == "sweep":
                assert len(document["units"]) == 2
            if kind == "retrieval":
                assert document["lengths"] == [300, 500]

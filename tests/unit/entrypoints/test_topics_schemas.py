"""`memstream topics schemas` writes files a producer in any language can validate against."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from memstream.client.events import turn_event
from memstream.entrypoints.cli import app


def test_schemas_are_written_and_validate_events(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["topics", "schemas", "--out", str(tmp_path)])

    assert done.exit_code == 0, done.output
    files = {p.name for p in tmp_path.glob("*.schema.json")}
    assert {"turn.v1.schema.json", "session_end.v1.schema.json", "forget.v1.schema.json"} <= files
    schema = json.loads((tmp_path / "turn.v1.schema.json").read_text())
    validator = Draft202012Validator(schema)
    good = turn_event(user_id="ann", session_id="s1", seq=0, text="hi", ts="2024-05-01T09:30:00Z")
    assert list(validator.iter_errors(good)) == []
    assert [e.path[0] for e in validator.iter_errors(good | {"role": "robot"})] == ["role"]
    assert "memstream.turns.v1" in schema["$comment"] and "user_id" in schema["$comment"]

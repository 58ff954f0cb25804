"""How a deployment's segmenter grows a batch's last steps: by its embedder."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from memstream.settings import Settings
from memstream.wiring.handlers import _pacing


def _growth(**settings: Any) -> int | None:
    container: Any = SimpleNamespace(settings=Settings(**settings), clock=lambda: datetime.now(UTC))
    return _pacing(container, bare=False).get("step_growth")


def test_the_int8_model_grows_its_last_steps_by_two_and_torch_by_three() -> None:
    assert _growth(embed_runtime="onnx-int8") == 2
    assert _growth(embed_runtime="torch") == 3

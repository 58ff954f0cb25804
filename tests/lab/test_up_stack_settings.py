"""`--this-setting KEY=VALUE`: settings for this tree's bench stacks only."""

from __future__ import annotations

import pytest

from memstream_lab.bench.up_stack import setting_pairs


def test_keys_get_the_prefix_once_and_values_stay_as_given() -> None:
    pairs = ["up_api_process=true", "MEMSTREAM_API_MAX_CONNECTIONS=5", "X=a=b"]
    assert setting_pairs(pairs) == {
        "MEMSTREAM_UP_API_PROCESS": "true",
        "MEMSTREAM_API_MAX_CONNECTIONS": "5",
        "MEMSTREAM_X": "a=b",
    }


@pytest.mark.parametrize("pair", ["novalue", "=true"])
def test_a_pair_without_key_or_value_is_refused(pair: str) -> None:
    with pytest.raises(ValueError, match="KEY=VALUE"):
        setting_pairs([pair])

"""The catalogue of memstream variants: well-formed and selectable by name."""

from __future__ import annotations

import pytest

from memstream.domain.recall_options import RecallOptions
from memstream.recall.stages import fit_in_place_of_leaves, gate_by_model
from memstream_lab.eval.variants import PRIMARY, VARIANTS, select


def test_names_and_fingerprints_are_unique() -> None:
    assert len({v.name for v in VARIANTS}) == len(VARIANTS)
    assert len({v.fingerprint for v in VARIANTS}) == len(VARIANTS)
    assert PRIMARY in {v.name for v in VARIANTS}


def test_fingerprint_is_stable_and_follows_the_configuration() -> None:
    first, second = VARIANTS[0], VARIANTS[1]
    assert first.fingerprint == select([first.name])[0].fingerprint
    assert first.fingerprint != second.fingerprint


def test_select_keeps_catalogue_order_and_rejects_unknown_names() -> None:
    names = [v.name for v in VARIANTS]
    assert [v.name for v in select([names[2], names[0]])] == [names[0], names[2]]
    assert select(None) == list(VARIANTS)
    with pytest.raises(ValueError, match="unknown variants"):
        select(["no-such-variant"])


def test_the_primary_variant_is_memstream_as_shipped() -> None:
    primary = select([PRIMARY])[0]
    assert primary.options == RecallOptions()
    assert primary.max_tokens is None and primary.segment_messages is None
    assert primary.segmentation == "exchange"


def test_the_primary_variant_runs_the_shipped_stages() -> None:
    primary = select([PRIMARY])[0]
    assert primary.gate is gate_by_model and primary.fit is fit_in_place_of_leaves


def test_a_stage_taken_out_is_a_stage_replaced_not_an_option() -> None:
    replaced = {
        v.name: v for v in VARIANTS if (v.gate, v.fit) != (gate_by_model, fit_in_place_of_leaves)
    }
    assert set(replaced) == {
        "no-trim",
        "no-query-facts",
        "no-dated-repeats",
        "no-replace",
        "no-gate",
    }
    assert all(v.options == RecallOptions() for v in replaced.values())

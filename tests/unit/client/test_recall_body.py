"""The recall request the SDK sends is one the API accepts, derivations asked for or not."""

from __future__ import annotations

from memstream.client.receipt import Receipt, tokens_of
from memstream.client.requests import recall_body
from memstream.edges.http.schemas import RecallRequestBase


def test_derivations_are_asked_for_only_when_wanted() -> None:
    plain = recall_body("ann", "where do I live?", None, "auto", None)
    asked = recall_body("ann", "where do I live?", None, "auto", None, with_derivation=True)
    assert "with_derivation" not in plain
    assert RecallRequestBase.model_validate(plain).with_derivation is False
    assert RecallRequestBase.model_validate(asked).with_derivation is True


def test_receipts_and_tokens_go_as_after_with_the_wait() -> None:
    receipt = Receipt("e1", "mst1.A")
    assert tokens_of(None) == [] and tokens_of(receipt) == ["mst1.A"]
    assert tokens_of([receipt, "mst1.B"]) == ["mst1.A", "mst1.B"]
    plain = recall_body("ann", "q", None, "auto", None)
    after = recall_body("ann", "q", None, "auto", None, after=tokens_of(receipt), wait_ms=900)
    assert "after" not in plain and "wait_ms" not in plain
    request = RecallRequestBase.model_validate(after)
    assert request.after == ["mst1.A"] and request.wait_ms == 900

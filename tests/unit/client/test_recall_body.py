"""The recall request the SDK sends is one the API accepts, derivations asked for or not."""

from __future__ import annotations

from memstream.client.requests import recall_body
from memstream.edges.http.schemas import RecallRequestBase


def test_derivations_are_asked_for_only_when_wanted() -> None:
    plain = recall_body("ann", "where do I live?", None, "auto", None)
    asked = recall_body("ann", "where do I live?", None, "auto", None, with_derivation=True)
    assert "with_derivation" not in plain
    assert RecallRequestBase.model_validate(plain).with_derivation is False
    assert RecallRequestBase.model_validate(asked).with_derivation is True

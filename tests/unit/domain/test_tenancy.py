"""Tenants' namespaces and the key file's rules (domain.tenancy)."""

from __future__ import annotations

import unicodedata

import pytest

from memstream.domain.tenancy import (
    Caller,
    KeyFileError,
    key_digest,
    operator_keys,
    owns,
    parse_key_file,
    scoped_prefix,
    tenant_of,
)

ACME = Caller("acme-bot", "acme")


def _key(key_id: str, key: str) -> dict[str, str]:
    return {"id": key_id, "sha256": key_digest(key)}


def test_a_tenant_reaches_its_namespace_only_and_an_operator_everything() -> None:
    assert ACME.reaches("acme:ann") and ACME.reaches("acme:globex:bob")
    assert not ACME.reaches("globex:bob") and not ACME.reaches("ann")
    assert Caller("ops").reaches("globex:bob") and Caller("ops").operator


@pytest.mark.parametrize(
    "user_id",
    [
        "acme:",  # the namespace itself names no user
        "acme",
        "ACME:ann",  # case
        "Acme:ann",
        "acme :ann",
        " acme:ann",
        "acme-:ann",
        "acmeann",
        "acme;ann",
        "acme\uff1aann",  # fullwidth colon
        "\uff41cme:ann",  # fullwidth a: NFKC folds it to "acme:ann"
        "\u0430cme:ann",  # Cyrillic a, a confusable
        "a\u0301cme:ann",  # a combining accent
        "acme\u200b:ann",  # zero-width space
        "globex:acme:ann",  # acme's name later in another tenant's id
    ],
)
def test_ids_that_try_to_escape_or_imitate_a_namespace_are_out_of_reach(user_id: str) -> None:
    assert not ACME.reaches(user_id)


def test_normalisation_never_moves_an_id_into_a_namespace() -> None:
    # The comparison is exact: an id only NFKC-equal to acme's is another tenant's or none.
    for tricky in ["\uff41cme:ann", "acme\ufe55ann"]:
        assert unicodedata.normalize("NFKC", tricky).startswith("acme:")
        assert not owns("acme", tricky)


def test_tenant_of_reads_the_name_before_the_first_separator() -> None:
    assert tenant_of("acme:ann") == "acme" and tenant_of("acme:globex:bob") == "acme"
    assert tenant_of("ann") is None and tenant_of("ACME:ann") is None
    assert tenant_of("acme:") is None


@pytest.mark.parametrize(
    ("prefix", "searched"),
    [("", "acme:"), ("ac", "acme:"), ("acme:", "acme:"), ("acme:a", "acme:a"), ("g", None)],
)
def test_a_listing_searches_inside_the_namespace(prefix: str, searched: str | None) -> None:
    assert scoped_prefix("acme", prefix) == searched
    assert scoped_prefix("acme", "acmex") is None and scoped_prefix("acme", "ACME:") is None


def test_a_key_file_names_operators_and_tenants_by_digest() -> None:
    table = parse_key_file(
        {
            "operators": [_key("ops-1", "op-secret")],
            "tenants": {"acme": [_key("acme-bot", "a1"), _key("acme-ui", "a2")]},
        }
    )
    assert table.identify("a2") == Caller("acme-ui", "acme")
    assert table.identify("op-secret") == Caller("ops-1")
    assert table.identify("nope") is None and table.identify(None) is None
    assert table.tenants == {"acme"}
    assert "a1" not in repr(table) and "op-secret" not in repr(table)


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ([], "must be a mapping"),
        ({"tenant": {}}, "unknown field"),
        ({"tenants": {"acme": []}}, "has no keys"),
        ({"tenants": {"acme": None}}, "has no keys"),
        ({"tenants": {"Acme": [_key("k", "x")]}}, "tenant name"),
        ({"tenants": {"ac:me": [_key("k", "x")]}}, "tenant name"),
        ({"tenants": ["acme"]}, "must map tenant names"),
        ({"tenants": {"acme": [{"id": "k", "key": "x"}]}}, "exactly the fields"),
        ({"tenants": {"acme": [{"id": "k b", "sha256": key_digest("x")}]}}, ".id:"),
        (
            {"tenants": {"a": [_key("k1", "same")], "b": [_key("k2", "same")]}},
            "are the same key",
        ),
        ({"tenants": {"a": [_key("k", "x")], "b": [_key("k", "y")]}}, "used twice"),
        ({"operators": [_key("k", "x"), _key("k2", "x")]}, "are the same key"),
    ],
)
def test_a_bad_key_file_is_refused_whole_with_a_reason(document: object, says: str) -> None:
    with pytest.raises(KeyFileError, match=says):
        parse_key_file(document)


def test_a_plaintext_key_in_place_of_a_digest_is_refused_without_echoing_it() -> None:
    with pytest.raises(KeyFileError) as refused:
        parse_key_file({"tenants": {"acme": [{"id": "k", "sha256": "my-plain-key"}]}})
    assert "not a SHA-256 hex digest" in str(refused.value)
    assert "my-plain-key" not in str(refused.value)


def test_the_environment_keys_are_operators_and_may_not_reappear_in_the_file() -> None:
    environment = operator_keys(["env-secret"])
    [caller] = environment.callers.values()
    assert caller.operator and caller.key_id.startswith("key-") and "env" not in caller.key_id
    clash = parse_key_file({"tenants": {"acme": [_key("acme-bot", "env-secret")]}})
    with pytest.raises(KeyFileError, match="configured twice"):
        environment.merged(clash)

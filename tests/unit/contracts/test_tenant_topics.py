"""Which turns topic a user's records go to (`contracts.tenant_topics`)."""

from __future__ import annotations

import pytest

from memstream.contracts.catalog import load_catalog
from memstream.contracts.tenant_topics import TurnsRouting, parse_tenants, topic_of
from memstream.settings import Settings


def test_a_configured_tenants_users_have_its_topic_and_every_other_id_the_shared_one() -> None:
    routing = TurnsRouting.of("p.memstream.turns.v1", ["acme", "globex"])
    assert routing.topic_for("acme:ann") == "p.memstream.turns.v1.acme"
    assert routing.topic_for("acme:globex:bob") == "p.memstream.turns.v1.acme"
    assert routing.topic_for("globex:bo") == "p.memstream.turns.v1.globex"
    # Outside every configured tenant, or not a tenant's id at all (tenancy's rules).
    for user in ("initech:x", "ann", "ACME:ann", "acme:", "acme"):
        assert routing.topic_for(user) == "p.memstream.turns.v1"
    assert routing.topics == (
        "p.memstream.turns.v1",
        "p.memstream.turns.v1.acme",
        "p.memstream.turns.v1.globex",
    )


def test_off_every_user_keeps_the_shared_topic() -> None:
    routing = TurnsRouting.of("memstream.turns.v1")
    assert not routing.on
    assert routing.topic_for("acme:ann") == "memstream.turns.v1"
    assert routing.topics == ("memstream.turns.v1",)


def test_marks_and_tokens_name_a_tenants_topic_and_leave_the_shared_one_unnamed() -> None:
    routing = TurnsRouting.of("p.memstream.turns.v1", ["acme"])
    assert routing.marked_topic("acme:ann") == "p.memstream.turns.v1.acme"
    assert routing.marked_topic("globex:bo") is None
    assert TurnsRouting.of("p.memstream.turns.v1").marked_topic("acme:ann") is None


def test_the_tenants_topics_are_configured_as_the_shared_one() -> None:
    turns = load_catalog("t.").turns
    specs = TurnsRouting.of(turns.name, ["acme"]).specs(turns)
    assert [s.name for s in specs] == ["t.memstream.turns.v1.acme"]
    assert specs[0].partitions == turns.partitions
    assert specs[0].configs == turns.configs


def test_the_setting_is_a_list_of_tenant_names() -> None:
    assert parse_tenants(" acme, globex ,,acme") == ("acme", "globex")
    settings = Settings(turns_topic_per_tenant="acme,globex")
    assert settings.broker.turns_routing("memstream.turns.v1").tenants == {"acme", "globex"}
    with pytest.raises(ValueError, match="not tenant names"):
        Settings(turns_topic_per_tenant="acme,Globex")


def test_one_topic_for_every_user_or_a_routing() -> None:
    assert topic_of("t")("acme:ann") == "t"
    assert topic_of(TurnsRouting.of("t", ["acme"]).topic_for)("acme:ann") == "t.acme"

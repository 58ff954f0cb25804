"""The operator's search across users: pages by id prefix, and cursors only it issued."""

from __future__ import annotations

import pytest
from tests.integration.tree_contract import commit
from tests.unit.fakes import FakeTree

from memstream.recall.service import InvalidCursor
from memstream.recall.users import UserSearch, decode_cursor, encode_cursor


async def test_pages_follow_one_another_until_the_last() -> None:
    tree = FakeTree()
    for user in ("ann", "anna", "annie", "bob", "an/"):
        await commit(tree, user)
    search = UserSearch(tree)  # type: ignore[arg-type]
    first = await search.page("ann", 2, None)
    assert [u.user_id for u in first.items] == ["ann", "anna"] and first.next_cursor
    second = await search.page("ann", 2, first.next_cursor)
    assert [u.user_id for u in second.items] == ["annie"] and second.next_cursor is None
    assert (await search.page("zed", 5, None)).items == []


@pytest.mark.parametrize("user_id", ["ann", "émile", "a/b c", "x" * 128])
def test_a_cursor_names_the_user_it_was_made_from(user_id: str) -> None:
    assert decode_cursor(encode_cursor(user_id)) == user_id


@pytest.mark.parametrize("cursor", ["", "%%%", "YW5u=", "_w", "x" * 3000, "YW5uAA="])
def test_a_cursor_not_issued_is_refused(cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        decode_cursor(cursor)

"""Every Redis key the tree store writes, and the functions that build them.

Every per-user key carries the `{user_id}` hash tag, so one user's keys live in one Redis
Cluster slot and a user's whole write is one MULTI/EXEC transaction. Layout, with the
default namespace `ms` (MEMSTREAM_REDIS_NAMESPACE); `<id>` is a node id, `<n>` a level:

    ms:{u}:state                JSON of the window reducer's state: the open session and
                                windows (the closed ones it remembers are in the next three)
    ms:{u}:sessions             hash: session id -> JSON of a closed session the reducer
                                remembers (`domain.remembered`), read by id for late turns
    ms:{u}:session_ages         sorted set: those session ids -> last message time (epoch
                                microseconds): the oldest are evicted past the bound
    ms:{u}:closed               sorted set: closed window key -> its place in closing order;
                                the newest MAX_REMEMBERED_CLOSED are kept
    ms:{u}:seen                 sorted set of processed event ids (idempotency markers,
                                `segmenter_state`): commit time and content mark packed
    ms:{u}:forgotten            sorted set: forgotten message id -> when (epoch s), the
                                message tombstones, kept as long as the seen markers
    ms:{u}:forget_reaches       hash: forgotten message id -> JSON list of the node ids
                                above its leaves that the forget reached, pruned with the
                                tombstones (the forget-status route reads only those)
    ms:{u}:outbox               list of JSON events the segmenter committed, not published
    ms:{u}:outbox:consolidator  the same, for the consolidator
    ms:{u}:node:<id>            JSON of a memory node (text included: recall climbs the tree)
    ms:{u}:children:<id>        set of child ids of a node (filled before the node exists)
    ms:{u}:level:<n>            sorted set of node ids by t_end (epoch seconds)
    ms:{u}:keys                 set of the user's other key suffixes (node:<id>,
                                children:<id>), added in the transaction that creates each:
                                what a forget deletes
    ms:{u}:session_terms        hash: L2 session id -> the lexicon and the term set of its
                                summary's text (`session_terms`), written and removed with
                                the node: what recall's summary signal reads of a session
    ms:{u}:sources              hash: message (event) id -> id of the L1 holding it, written
                                and removed with the L1s, so a message forget finds its L1
                                directly (the field "" marks it complete: older L1s too)
    ms:{u}:expiry               sorted set: message id -> its deadline (epoch s)
    ms:{u}:facts                hash: L1 id -> JSON list of the facts its messages state, as
                                extracted (the observations; versions are derived on read,
                                `domain.knowledge`), written and removed with the L1s
    ms:{u}:fact_slots           sorted set (all scores 0, read by range): "subject US
                                attribute US L1 id" of every fact written, so a slot's L1s are
                                found without reading every fact (a member of a rewritten L1
                                may outlive its fact: readers keep what the hash still says)
    ms:{u}:fact_heads           hash: "subject US attribute US" -> JSON of the slot's last
                                statement and its chains' last versions (`domain.fact_heads`),
                                written with the facts: what a restatement reads of its slot
    ms:{u}:entities             hash: L1 id -> JSON of the entity surfaces and alias links
                                of its messages (the entity index's leaves), likewise
    ms:{u}:knowledge_revision   a token set anew (never the same twice) in every transaction
                                that changes the two hashes above: readers keep what they
                                derive from them by it (`knowledge_cache`)
    ms:{u}:knowledge_changes    list, the last 32 revisions in the order they were set, each
                                JSON of the revision and the L1 ids its transaction changed
                                (`knowledge_log`): a reader steps what it holds forward
    ms:{u}:tombstone            JSON of the user's tombstone after a forget (expires; see
                                `domain.forgetting`); commits with a guard check it atomically
    ms:{u}:rebuild              JSON of the user's latest rebuild job (`domain.rebuild`)
    ms:{u}:rebuild_leaves       list: that job's leaf ids, read a chunk's range at a time
    ms:{u}:rebuild_windows      list: the windows it consolidates again at the end
    ms:{u}:datakey              the user's data key (32 random bytes, base64): what the
                                user's words on memstream's own topics are sealed under
                                (`contracts.sealed`) and its index payloads; made by the
                                user's first sealed write unless it has a tombstone,
                                deleted by a forget: every sealed copy becomes unreadable
    ms:{u}:degraded             set of the user's node ids among `ms:degraded`, written and
                                removed in the same transactions: what the user's overview
                                counts and its forget removes, never the set of all users
    ms:{u}:overflow             hash: "partition:offset" of each of the user's turns-log
                                records the segmenter sent to the overflow topic, struck
                                off once handled from there (`overflow`; only with a
                                tenant share set): the user's later records follow them
    ms:due                      sorted set: user -> earliest time a tick may close something
    ms:rebuilds                 sorted set: user -> when its rebuild may take its next chunk
                                (+inf: its leaves are done, its windows not yet seen
                                consolidated)
    ms:users                    sorted set of every user id with state, all scores 0 (read
                                by id prefix with ZRANGEBYLEX), added by the segmenter's
                                commit, removed by a forget
    ms:degraded                 set of JSON ["user", "node id"] the offline fallback wrote
    ms:degraded_by_user         set once `ms:{u}:degraded` holds the markers written before
                                it existed (`RedisUsers.index_degraded_by_user`, the clock's
                                first run): no later run reads `ms:degraded` for it again
    ms:progress                 hash: turns partition -> the next offset the segmenter has
                                yet to handle, marked once the records before it are
                                committed (what read-your-writes waits on); with a turns
                                topic per tenant, `<topic>:<partition>` for a tenant's
                                topic (the shared topic's fields stay the partition alone)
    ms:overflow_queues          hash: tenant -> its partition of the overflow topic, chosen
                                by the first worker that diverts it, never changed (only
                                with a tenant share set)

On Redis Cluster (MEMSTREAM_REDIS_CLUSTER) a user's commit must stay in its user's slot, so
the four indexes its transactions write are split by slot, each part named by a hash tag that
maps to that slot (`slots.slot_tag`; `<s>` below); readers ask every slot's part, pipelined
per primary. `ms:progress` and `ms:degraded_by_user` are written on their own, and stay one
key each.

    ms:due:{<s>}                the users of slot <s> in `ms:due`
    ms:rebuilds:{<s>}           the users of slot <s> in `ms:rebuilds`
    ms:users:{<s>}              the users of slot <s> in `ms:users`
    ms:degraded:{<s>}           the nodes of the users of slot <s> in `ms:degraded`

`tests/integration/test_redis_keys.py` reads this table: a key written that it does not
list fails the test.
"""

from __future__ import annotations

import json

from memstream.adapters.redis.slots import slot_tag
from memstream.domain.models import Level
from memstream.ports import OutboxName

DEFAULT_NAMESPACE = "ms"

STATE = "state"
# The window state's remembered closed sessions (id -> session, and id -> last message time
# in microseconds) and closed window keys (key -> its place), kept apart from `state`.
SESSIONS = "sessions"
SESSION_AGES = "session_ages"
CLOSED = "closed"
SEEN = "seen"
FORGOTTEN = "forgotten"
# message id -> the nodes above its leaves when it was forgotten (JSON list), pruned with
# the message tombstones
FORGET_REACHES = "forget_reaches"
KEYS = "keys"
SOURCES = "sources"
# L2 session id -> its summary's terms (`session_terms`), written and removed with the node.
SESSION_TERMS = "session_terms"
EXPIRY = "expiry"
TOMBSTONE = "tombstone"
REBUILD = "rebuild"
# The latest rebuild job's leaf and window ids (lists, `domain.rebuild.RebuildPlan`), written
# once when it is planned: a chunk reads its range of leaves, not the whole job.
REBUILD_LEAVES = "rebuild_leaves"
REBUILD_WINDOWS = "rebuild_windows"
DATAKEY = "datakey"
# The user's node ids among the degraded markers of all users, kept beside them.
DEGRADED = "degraded"
# Not among FIXED_SUFFIXES: a forget leaves it to the overflow to strike off (`overflow`).
OVERFLOW = "overflow"
FACTS = "facts"
# (subject, attribute, L1 id) of every fact written, lexically sorted: a slot's L1s without
# reading every fact of the user (members of rewritten L1s may outlive their facts: readers
# take only what the facts hash still says).
FACT_SLOTS = "fact_slots"
# (subject, attribute) -> the slot's head (its last statement and the last version of each
# chain, `domain.fact_heads`), written with the facts: what a restatement reads of its slot.
FACT_HEADS = "fact_heads"
ENTITIES = "entities"
KNOWLEDGE_REVISION = "knowledge_revision"
KNOWLEDGE_CHANGES = "knowledge_changes"
# The segmenter's outbox keeps its first key, so an upgrade still publishes what it left.
OUTBOX: dict[OutboxName, str] = {"segmenter": "outbox", "consolidator": "outbox:consolidator"}

# Every per-user key whose name does not depend on a node (the levels are listed apart).
FIXED_SUFFIXES = (
    STATE,
    SESSIONS,
    SESSION_AGES,
    CLOSED,
    SEEN,
    FORGOTTEN,
    FORGET_REACHES,
    *OUTBOX.values(),
    KEYS,
    SOURCES,
    SESSION_TERMS,
    EXPIRY,
    REBUILD,
    REBUILD_LEAVES,
    REBUILD_WINDOWS,
    FACTS,
    FACT_SLOTS,
    FACT_HEADS,
    ENTITIES,
    KNOWLEDGE_REVISION,
    KNOWLEDGE_CHANGES,
    DATAKEY,
    DEGRADED,
)

# A field of the message index no message id can be (ids are never empty): every L1 of the
# user is in the index, those written before it existed included.
SOURCES_COMPLETE = ""


_SLOT_SEPARATOR = "\x1f"


def fact_slot_member(subject: str, attribute: str, leaf_id: str = "") -> str:
    """A member of `FACT_SLOTS`; with no leaf id, the prefix every member of the slot has."""
    return f"{subject}{_SLOT_SEPARATOR}{attribute}{_SLOT_SEPARATOR}{leaf_id}"


def fact_subject_prefix(subject: str) -> str:
    """The prefix every member of `FACT_SLOTS` of one subject has, whatever its attribute."""
    return f"{subject}{_SLOT_SEPARATOR}"


def leaf_of_fact_slot(member: str) -> str:
    return member.rsplit(_SLOT_SEPARATOR, 1)[1]


def user_prefix(user_id: str, namespace: str = DEFAULT_NAMESPACE) -> str:
    return f"{namespace}:{{{user_id}}}:"


def node(node_id: str) -> str:
    return f"node:{node_id}"


def children(node_id: str) -> str:
    return f"children:{node_id}"


def level(of: Level | int) -> str:
    return f"level:{int(of)}"


def _across_users(namespace: str, name: str, slot: int | None) -> str:
    """An index shared by all users: one key, or on a cluster its part in `slot`."""
    return f"{namespace}:{name}" if slot is None else f"{namespace}:{name}:{{{slot_tag(slot)}}}"


def due(namespace: str, slot: int | None = None) -> str:
    return _across_users(namespace, "due", slot)


def rebuilds(namespace: str, slot: int | None = None) -> str:
    return _across_users(namespace, "rebuilds", slot)


def progress(namespace: str) -> str:
    return f"{namespace}:progress"


def progress_field(partition: int, topic: str | None = None) -> str:
    """A partition's field in `ms:progress`: the shared turns topic's (None) by its number,
    a tenant's topic's by the topic too (a topic name has no colon)."""
    return str(partition) if topic is None else f"{topic}:{partition}"


def overflow_queues(namespace: str) -> str:
    return f"{namespace}:overflow_queues"


def users(namespace: str, slot: int | None = None) -> str:
    return _across_users(namespace, "users", slot)


def degraded(namespace: str, slot: int | None = None) -> str:
    return _across_users(namespace, "degraded", slot)


def degraded_by_user(namespace: str) -> str:
    return f"{namespace}:degraded_by_user"


def degraded_member(user_id: str, node_id: str) -> str:
    # JSON keeps the two apart whatever characters either holds ("|" included).
    return json.dumps([user_id, node_id])


def legacy_member(user_id: str, node_id: str) -> str:
    return f"{user_id}|{node_id}"


def decode_member(member: bytes | str) -> tuple[str, str]:
    """(user, node id) of a `degraded` member, either format.

    Before JSON, members were "user|node id"; node ids are uuids, so the last "|" splits
    those written then, and they are still read until each node's next write replaces them.
    """
    text = member.decode() if isinstance(member, bytes) else member
    if text.startswith("["):
        pair = json.loads(text)
        return str(pair[0]), str(pair[1])
    user_id, _, node_id = text.rpartition("|")
    return user_id, node_id

"""The groups of `Settings`: one model per part of memstream, each field with its variable.

A group's fields are read from `MEMSTREAM_<GROUP PREFIX><FIELD>` unless the field names its
variable itself (`validation_alias`): the variables stay those operators already set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import (
    AliasChoices,
    AliasGenerator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
)

from memstream.contracts.tenant_topics import TurnsRouting, parse_tenants
from memstream.domain.recall_options import RecallOptions

# Recall's defaults live with its options; settings only let a deployment override them.
_RECALL_DEFAULTS = RecallOptions()

Embedder = Literal["local", "openai", "hashing"]
EmbedRuntime = Literal["torch", "onnx-fp32", "onnx-int8"]
SegmentBy = Literal["exchange", "count"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def _group(prefix: str) -> ConfigDict:
    """A group whose field `name` is read from MEMSTREAM_<prefix><NAME> unless it names its own."""
    return ConfigDict(
        extra="forbid",
        validate_by_name=True,
        validate_by_alias=True,
        alias_generator=AliasGenerator(
            validation_alias=lambda name: f"MEMSTREAM_{prefix}{name}".upper()
        ),
    )


def variables(group: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Field name -> its variables, the documented one first."""
    out: dict[str, tuple[str, ...]] = {}
    for name, field in group.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            out[name] = tuple(str(choice) for choice in alias.choices)
        else:
            out[name] = (str(alias),)
    return out


class BrokerSettings(BaseModel):
    """Kafka: where the topics are, and this process's place in its consumer group."""

    model_config = _group("KAFKA_")

    bootstrap: str = Field(
        default="", description="Kafka bootstrap servers; empty: embedded Tansu broker."
    )
    topic_prefix: str = Field(
        default="",
        validation_alias="MEMSTREAM_TOPIC_PREFIX",
        description="Prefix for every topic name.",
    )
    turns_topic_per_tenant: str = Field(
        default="",
        validation_alias="MEMSTREAM_TURNS_TOPIC_PER_TENANT",
        description="Comma-separated tenant names, each given a turns topic "
        "of its own (`memstream.turns.v1.<tenant>`): producers and memstream's own commands "
        "write a tenant's users' records there, the segmenter reads every one and, with a "
        "tenant share set, pauses the topic of a tenant over its share instead of diverting "
        "its turns to the overflow. Every producer and worker needs the same list. Empty: "
        "off, one shared turns topic (docs/fair-share.md).",
    )
    consumer_group: str = Field(
        default="memstream",
        validation_alias="MEMSTREAM_CONSUMER_GROUP",
        description="Kafka consumer group id.",
    )
    fetch_max_wait_ms: int = Field(
        default=100,
        ge=1,
        le=10_000,
        description="Longest a consumer's fetch waits at the broker for new records.",
    )
    # Off against a real Kafka broker, which never hands a consumer a later batch first, and
    # where a producer's transactions leave offsets without records (their markers): every
    # one would be read for nothing.
    read_back_skipped: bool = Field(
        default=False,
        description="The segmenter reads back turns its consumer stepped over (offsets of a "
        "partition that do not follow one another), as the embedded broker can make it do; "
        "the embedded stack turns it on. For a broker that never does, leave it off: a "
        "transactional producer's markers would each be read for nothing.",
    )
    # A stable instance id per process (a StatefulSet pod name) makes the group static
    # (KIP-345) where the broker honours it: see docs/design.md, "Restarts".
    group_instance_id: str = Field(
        default="",
        max_length=249,
        description="group.instance.id of this worker (static membership); k8s sets the "
        "StatefulSet pod's name. Empty: dynamic membership.",
    )
    session_timeout_s: float = Field(
        default=6.0,
        gt=0,
        description="A member silent this long leaves the group (a killed worker's partitions "
        "wait this long; k8s: 10).",
    )
    heartbeat_interval_s: float = Field(
        default=1.0, gt=0, description="Heartbeat period; at most a third of the session."
    )
    rebalance_timeout_s: float = Field(
        default=6.0, gt=0, description="How long a rebalance waits for members to rejoin (k8s: 30)."
    )

    @field_validator("turns_topic_per_tenant")
    @classmethod
    def _tenant_names(cls, value: str) -> str:
        # A name Kafka or the tenancy rules refuse would leave a tenant's records nowhere.
        TurnsRouting.of("turns", parse_tenants(value))
        return value

    def turns_routing(self, shared: str) -> TurnsRouting:
        """Which turns topic each user's records go to (the shared one alone when off)."""
        return TurnsRouting.of(shared, parse_tenants(self.turns_topic_per_tenant))


class RedisSettings(BaseModel):
    """Redis: the memory tree and the windows' state."""

    model_config = _group("REDIS_")

    url: str = Field(default="", description="Redis URL; empty: embedded redis-server.")
    cluster: bool = Field(
        default=False,
        description="The URL names a node of a Redis Cluster: use the cluster client, and "
        "split the indexes across users by hash slot (docs/cluster.md).",
    )
    wait_replicas: int = Field(
        default=0,
        ge=0,
        description="A commit returns once this many replicas hold it (WAIT after each "
        "transaction), so a failover cannot lose what the offsets already passed; with "
        "replicas, 1 (docs/cluster.md). A commit waits for no more replicas than its primary "
        "has connected (a primary left alone writes on). 0: do not wait.",
    )
    wait_timeout_ms: int = Field(
        default=1000,
        gt=0,
        description="How long one WAIT lasts; a commit still short of its replicas then is "
        "counted (store errors, kind replica_lag) and waits again.",
    )
    connections: int = Field(
        default=64,
        ge=0,
        le=10_000,
        description="Connections each serving process (workers, the API, `memstream up`) "
        "opens to a single Redis primary at start, so that a burst of commands up to that "
        "many at once opens none; beyond them a connection more opens for each command in "
        "flight. 0: all open when needed. A cluster's nodes open theirs as needed.",
    )
    namespace: str = Field(
        default="ms",
        pattern=r"^[A-Za-z0-9._-]{1,64}$",
        description="Prefix of every Redis key (deployments may share one Redis).",
    )
    node_cache_mb: int = Field(
        default=48,
        ge=0,
        description="Memory (MiB) a process may hold in decoded memory nodes, kept by Redis "
        "key with the bytes they were decoded from (never stale: a rewritten node has other "
        "bytes); 0: decode every read.",
    )
    node_cache: int | None = Field(
        default=None,
        ge=0,
        description="At most this many decoded nodes as well (unset: memory alone bounds "
        "them; 0: decode every read).",
    )
    knowledge_cache_users: int = Field(
        default=64,
        ge=0,
        description="Users whose derived facts and entity index a process keeps, by the "
        "user's knowledge revision: a read costs one GET while it stays the same, and after a "
        "write reads and derives again only the L1s the write changed (about 0.5 MiB for 700 "
        "L1s); 0: derive on every read.",
    )


class QdrantSettings(BaseModel):
    """Qdrant: the vectors of every memory."""

    model_config = _group("QDRANT_")

    url: str = Field(
        default="", description="Qdrant URL; empty: local mode in `MEMSTREAM_DATA_DIR`."
    )
    api_key: SecretStr | None = Field(default=None, description="Qdrant API key.")
    collection: str = Field(
        default="memstream_memories", description="The one collection for all users."
    )
    # A user of 100,000 leaves is 165 MiB of float32 rows.
    leaf_vectors_mb: int = Field(
        default=256,
        ge=0,
        description="In-process engine only (no URL): memory (MiB) for the dense vectors of "
        "users of many leaves (`leaf_vectors_from`), held as one matrix each, so a leaf "
        "search scores them with one product and the engine scores only the best few (the "
        "same answer); least recently searched users dropped first; 0: the engine scans every "
        "point of the user.",
    )
    # Below this the engine's own scan of float16 vectors costs about what the product over
    # float32 rows and the id list it is sent do (docs/scaling.md).
    leaf_vectors_from: int = Field(
        default=32_768,
        ge=0,
        description="Hold a user's vectors (`leaf_vectors_mb`) from this many points of a "
        "level: below it the engine's own scan costs less.",
    )
    leaf_vectors_probe: int = Field(
        default=0,
        ge=0,
        description="Above 0, a held user's vectors are grouped in cells around trained "
        "centroids and a leaf search scores the rows of the cells nearest the query until it "
        "has scored this many (at least the prefetch's depth), whatever the user's history; "
        "the engine scores those it picks, and a row among the best in a cell not probed is "
        "missed (docs/figures/scale.md measures how often). 0: one matrix, every row scored "
        "(the exact search).",
    )
    search_threads: int = Field(
        default=1,
        ge=1,
        description="In-process engine only (no URL): threads of its search pool, which read "
        "a query's segments in parallel. A recall's search is small, and more threads cost "
        "more CPU to wake than they share (docs/read-your-writes.md).",
    )


LLM_TASKS = ("segment", "facts", "consolidate", "plan", "gate")


class LlmSettings(BaseModel):
    """The language model that writes the memories; an empty base URL: the offline backend."""

    model_config = _group("LLM_")

    base_url: str = Field(
        default="", description="OpenAI-compatible endpoint; empty: offline backend."
    )
    model: str = Field(default="gpt-4o-mini", description="Chat model name.")
    api_key: SecretStr = Field(default=SecretStr(""), description="Key for the LLM endpoint.")
    timeout_s: float = Field(default=30.0, gt=0, description="Per-request LLM timeout.")
    max_retries: int = Field(default=3, ge=0, le=10, description="Retries on transient LLM errors.")
    json_schema: bool = Field(
        default=False,
        description="Ask the endpoint to enforce each answer's JSON schema (llama.cpp, vLLM "
        "and OpenAI do); off: only a JSON object, which more servers accept.",
    )
    max_tokens: int | None = Field(
        default=None,
        gt=0,
        description="Ceiling on each answer's tokens; empty: the endpoint's own. A small model "
        "held to a schema may pad its answer until the ceiling or the timeout.",
    )
    tasks: str = Field(
        default=",".join(LLM_TASKS),
        description="What the model does, comma-separated, of: segment (an L1's text), facts "
        "(an L1's facts), consolidate (the L2-L5 summaries), plan and gate (recall's, on every "
        "request); the rest is the offline backend's. `facts,consolidate` keeps recall and the "
        "L1s' text offline: no model call on a recall, one fewer a message (docs/llm-tasks.md).",
    )
    prompt_version: str = Field(
        default="",
        max_length=64,
        validation_alias="MEMSTREAM_PROMPT_VERSION",
        description="The prompts' version recorded in every node's derivation; empty: the "
        "shipped prompts' own (set it when you change the prompts, then run a rebuild).",
    )

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: str) -> str:
        # A misspelt task would silently leave its work to the offline backend.
        named = [task.strip() for task in value.split(",") if task.strip()]
        unknown = sorted(set(named) - set(LLM_TASKS))
        if unknown:
            raise ValueError(f"unknown LLM task(s) {unknown}; known: {', '.join(LLM_TASKS)}")
        if not named:
            raise ValueError("no LLM task named; leave MEMSTREAM_LLM_BASE_URL empty for none")
        return ",".join(task for task in LLM_TASKS if task in named)

    @property
    def named_tasks(self) -> tuple[str, ...]:
        """The tasks `tasks` names, in `LLM_TASKS`' order (the validator wrote them so)."""
        return tuple(self.tasks.split(","))

    def does(self, task: str) -> bool:
        """Whether the model (an endpoint being set) does `task`, one of `LLM_TASKS`."""
        if task not in LLM_TASKS:
            raise ValueError(f"unknown LLM task {task!r}")
        return bool(self.base_url) and task in self.named_tasks


class EmbeddingSettings(BaseModel):
    """The embedder: which one, and how the local model runs."""

    model_config = _group("EMBED_")

    backend: Embedder = Field(
        default="local",
        validation_alias="MEMSTREAM_EMBEDDER",
        description="local (MiniLM shipped in a wheel), openai, or hashing (tests only).",
    )
    base_url: str = Field(
        default="",
        validation_alias="MEMSTREAM_EMBEDDING_BASE_URL",
        description="Endpoint for `MEMSTREAM_EMBEDDER=openai`.",
    )
    model: str = Field(
        default="text-embedding-3-small",
        validation_alias="MEMSTREAM_EMBEDDING_MODEL",
        description="Embedding model.",
    )
    api_key: SecretStr = Field(
        default=SecretStr(""),
        validation_alias="MEMSTREAM_EMBEDDING_API_KEY",
        description="Key for the embeddings endpoint.",
    )
    dim: int = Field(
        default=384,
        gt=0,
        validation_alias="MEMSTREAM_EMBEDDING_DIM",
        description="Dense vector size.",
    )
    batch_size: int = Field(default=64, gt=0, description="Texts per model forward pass.")
    runtime: EmbedRuntime = Field(
        default="onnx-int8",
        description="How `MEMSTREAM_EMBEDDER=local` runs the model: torch (sentence-transformers), "
        "onnx-fp32 or onnx-int8 (ONNX Runtime; the graph is exported from the shipped weights "
        "on first use, int8 quantized).",
    )
    threads: int = Field(
        default=0,
        ge=0,
        le=64,
        description="Threads of each local model process, set inside it; 0: one in the recall "
        "API (its event loop needs the other core), in a worker the cores shared out between "
        "its model processes.",
    )
    processes: int = Field(
        default=0,
        ge=0,
        le=16,
        description="Processes that each hold a copy of the local model and take batches side "
        "by side (each copy costs memory: docs/figures/ingest.md measures it per runtime); "
        "0: one in the recall API, two in a worker with two cores or more.",
    )
    recent_vectors: int = Field(
        default=512,
        ge=0,
        le=100_000,
        description="Texts whose vectors a process running both the segmenter and the recall "
        "API keeps (the latest), so that a recall whose query is a message just written is "
        "not embedded again; 0: none. About 12 KB each.",
    )
    model_cache_dir: Path | None = Field(
        default=None,
        validation_alias="MEMSTREAM_MODEL_CACHE_DIR",
        description="Where exported ONNX graphs are kept; empty: `<data dir>/models`.",
    )


class WorkerSettings(BaseModel):
    """How a worker takes records from its topic, retries them and stops."""

    model_config = _group("")

    consume_batch_size: int = Field(
        default=4096,
        gt=0,
        le=10_000,
        description="Most records a worker takes from its topic at once.",
    )
    consume_step_size: int = Field(
        default=1024,
        gt=0,
        le=10_000,
        description="Most records the segmenter stores together (a batch's last steps are "
        "smaller); the next step embeds meanwhile.",
    )
    record_retry_budget_s: float = Field(
        default=10.0,
        gt=0,
        description="Most time one failing record may take before it is dead-lettered "
        "(outages of a store or the broker are waited out instead).",
    )
    max_event_skew_s: float = Field(
        default=86_400.0,
        gt=0,
        description="An event dated further than this ahead of the wall clock is "
        "dead-lettered: it would move its user's watermark into the future.",
    )
    shutdown_grace_s: float = Field(
        default=25.0,
        gt=0,
        description="After SIGTERM, a worker that has not stopped in this long kills its "
        "children and exits (keep it below the pod's terminationGracePeriodSeconds).",
    )


class LifecycleSettings(BaseModel):
    """Sessions, segments, windows and retention: when memories are made and forgotten."""

    model_config = _group("")

    default_tz: str = Field(default="UTC", description="Zone for users whose turns carry no tz.")
    session_idle_timeout_s: float = Field(
        default=1800.0, gt=0, description="A session with no new turn for this long closes."
    )
    session_reuse_gap_s: float | None = Field(
        default=None,
        gt=0,
        description="A turn dated at least this long (event time) after the last turn of "
        "its session id starts a new session under that id; unset: the idle timeout. Set "
        "it when the idle timeout is shortened to close sessions quickly in wall time "
        "(the demo does) and turns are dated further apart than that.",
    )
    session_reorder_turns: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="Turns of a user held, at most, while a session's turn with an earlier "
        "seq is missing, so turns arriving out of order are taken in seq order; a count, "
        "not a time, so a replay holds the same turns (0, the default: taken as they "
        "arrive; 32 for producers that send one session from several instances; "
        "docs/producers.md).",
    )
    clock_grace_s: float = Field(
        default=3600.0, ge=0, description="Wall-clock wait past a day/week/month end."
    )
    clock_interval_s: float = Field(default=60.0, gt=0, description="How often the clock ticks.")
    retention_days: float = Field(
        default=0.0,
        ge=0,
        description="Longest a message is kept, from its own time (ts): then it is forgotten "
        "like a message forget, as a turn's expires_at asks (0: kept until forgotten).",
    )
    segment_messages: int = Field(
        default=2, ge=1, le=64, description="Most messages in one L1 segment."
    )
    segment_by: SegmentBy = Field(
        default="exchange",
        description="exchange: a user message and the assistant's reply (a message between "
        "people stands alone); count: every `MEMSTREAM_SEGMENT_MESSAGES` messages.",
    )
    history_window: int = Field(
        default=3, ge=0, le=20, description="Same-level memories given as context."
    )
    knowledge: bool = Field(
        default=True,
        description="Extract facts and entities from every L1 and commit them with it, and "
        "recall, the profile and the facts routes use them (its cost: "
        "docs/figures/knowledge-write.md); off, the facts routes answer 501 and a forget "
        "still removes what an earlier run wrote about its leaves.",
    )
    seal_topics: bool = Field(
        default=True,
        description="Seal the records of memstream's own topics that carry a user's words "
        "(memory and fact events, dead letters) under the user's data key, which a forget "
        "deletes: every copy in the logs becomes unreadable at once; feed consumers open "
        "them through POST /v1/feed:open (docs/forget-everywhere.md).",
    )
    seal_index: bool = Field(
        default=False,
        description="Seal the words in the index's payloads (a node's text, messages and "
        "facts) under the user's data key, so a forget leaves the index's segment files and "
        "write-ahead log unreadable at once. Off by default: sealed, the index alone cannot "
        "give the tree back after Redis is lost with its keys (`memstream repair`); off, a "
        "user forget deletes the points and vacuums the in-process index "
        "(docs/forget-everywhere.md).",
    )
    forget_compaction: bool = Field(
        default=True,
        description="After a user forget, vacuum the in-process index's deleted points off "
        "its disk and have Redis rewrite its append-only file (when it keeps one), so no "
        "file keeps the user's words (docs/forget-everywhere.md).",
    )


class RebuildSettings(BaseModel):
    """Rebuilds and repairs (`memstream rebuild`, `memstream repair`): how fast they write the
    tree again, and how much the check that notices a lost store reads."""

    model_config = _group("REBUILD_")

    leaves_per_s: float = Field(
        default=20.0,
        gt=0,
        le=10_000,
        description="Leaves the deployment's rebuilds re-derive per second at most (the "
        "scheduler paces their chunks; live turns never wait for them).",
    )
    chunk_leaves: int = Field(
        default=16,
        ge=1,
        le=1000,
        description="Leaves re-derived per rebuild command: the longest a rebuild holds its "
        "partition.",
    )
    repair_nodes_per_s: float = Field(
        default=200.0,
        gt=0,
        le=100_000,
        description="Nodes a `memstream repair` writes again per second at most, into the "
        "index or the tree (docs/repair.md).",
    )
    divergence_sample_users: int = Field(
        default=20,
        ge=1,
        le=10_000,
        description="Users whose node counts per level the divergence check compares between "
        "the tree and the index, each check (docs/repair.md).",
    )
    divergence_check_s: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        description="How often the scheduler's process and readiness compare the tree with "
        "the index; a lost store turns readiness false within this (docs/repair.md).",
    )


class RecallSettings(BaseModel):
    """Recall: how leaves are ranked and how much a request may ask for."""

    model_config = _group("RECALL_")

    leaf_top_k: int = Field(
        default=_RECALL_DEFAULTS.leaf_top_k,
        gt=0,
        le=200,
        description="L1 leaves kept after re-ranking.",
    )
    dense_weight: float = Field(
        default=_RECALL_DEFAULTS.dense_weight,
        ge=0,
        le=1,
        description="Weight of the dense score in leaf fusion.",
    )
    max_query_chars: int = Field(default=2000, gt=0, description="Longest query accepted.")
    default_max_tokens: int = Field(
        default=_RECALL_DEFAULTS.default_max_tokens,
        gt=0,
        description="Token ceiling when a request names none.",
    )
    max_tokens_limit: int = Field(
        default=16_000, gt=0, description="Largest max_tokens a request may ask for."
    )

    def options(self) -> RecallOptions:
        """Recall's options: the shipped defaults with this deployment's overrides."""
        return RecallOptions(
            leaf_top_k=self.leaf_top_k,
            dense_weight=self.dense_weight,
            default_max_tokens=self.default_max_tokens,
        )


class ApiSettings(BaseModel):
    """The recall API (`memstream serve`): keys, address, limits and processes."""

    model_config = _group("API_")

    keys: list[SecretStr] = Field(
        default_factory=list,
        validation_alias="MEMSTREAM_RECALL_API_KEYS",
        description="Bearer keys of the recall API (JSON list); required unless "
        "`MEMSTREAM_RECALL_AUTH_DISABLED`.",
    )
    auth_disabled: bool = Field(
        default=False,
        validation_alias="MEMSTREAM_RECALL_AUTH_DISABLED",
        description="With no keys, serve the recall API unauthenticated (local development).",
    )
    key_file: Path | None = Field(
        default=None,
        description="YAML or JSON file of operator and tenant keys, as SHA-256 digests "
        "(docs/tenants.md); read again when its content changes. Its keys serve beside "
        "`MEMSTREAM_RECALL_API_KEYS`, which are operator keys.",
    )
    key_file_poll_s: float = Field(
        default=5.0, gt=0, le=3600, description="How often the key file is checked for changes."
    )
    tenant_rate_per_s: float = Field(
        default=0.0,
        ge=0,
        description="Requests a second each tenant's keys may make to `/v1` (a token bucket per "
        "tenant and API process; over it: 429 with `Retry-After`); 0: no limit. Operator keys "
        "are never limited.",
    )
    tenant_burst: int = Field(
        default=20, ge=1, description="Requests a tenant may make at once above its rate."
    )
    host: str = Field(default="127.0.0.1", description="Recall API bind address.")
    port: int = Field(default=8080, ge=0, le=65535, description="Recall API port.")
    max_body_bytes: int = Field(
        default=65_536,
        ge=1024,
        le=16 * 1024 * 1024,
        description="Largest request body the recall API reads; larger ones get 413 unread.",
    )
    read_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Time a client has to send a whole request, headers and body (from "
        "connecting, or from the previous response), before the recall API hangs up.",
    )
    keep_alive_timeout_s: int = Field(
        default=5, ge=1, le=300, description="Idle keep-alive connections close after this."
    )
    max_connections: int = Field(
        default=1000,
        ge=1,
        description="Connections and requests in progress beyond which the recall API "
        "answers 503 at once.",
    )
    workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Recall API processes sharing the port, with one model server among them "
        "(`MEMSTREAM_API_SHARED_MODEL`; more than one worker needs `MEMSTREAM_QDRANT_URL`: the "
        "in-process engine is not shared). Their metrics are summed in prometheus_client's "
        "multiprocess files under `<data dir>/api-metrics`, so any worker's `/metrics` answers "
        "for the pod (without the `process_*` and `python_gc_*` series).",
    )
    shared_model: bool = Field(
        default=True,
        description="With `MEMSTREAM_API_WORKERS` > 1: one model server process (`<data "
        "dir>/model.sock`, one thread) embeds the queries of every worker of the pod, instead "
        "of a model process each; it is watched like a worker. `false`: a model process per "
        "worker.",
    )
    up_api_process: bool = Field(
        default=True,
        validation_alias="MEMSTREAM_UP_API_PROCESS",
        description="`memstream up` only: run the recall API in a child process of its own "
        "(as `memstream serve` runs it, same address and settings), beside the process of the "
        "segmenter, consolidator and clock, which owns the in-process index and serves it to "
        "the API over `<data dir>/index.sock`; the two event loops no longer queue behind each "
        "other. The stack stops when the API process dies (docs/read-your-writes.md). Needs a "
        "fixed `MEMSTREAM_API_PORT` (with 0 the API runs in the one process, as with `false`). "
        "`false`: one process, one event loop for both, about 220 MB less memory and 1 ms less "
        "CPU a recall, and the loop is the queue at high rates.",
    )
    max_wait_ms: int = Field(
        default=5_000,
        ge=0,
        le=60_000,
        description="Longest `wait_ms` a read with write tokens (`after`) may ask for: how "
        "long it may wait for the segmenter to commit past them before answering `pending`.",
    )
    write_token_key: SecretStr | None = Field(
        default=None,
        description="Key that signs the write tokens of publish receipts (the SDK's "
        "`write_token_key` and the MCP server must be given the same); none: tokens are only "
        "checksummed, so a token can be made by hand for the user it names.",
    )

    @field_validator("keys")
    @classmethod
    def _no_blank_keys(cls, keys: list[SecretStr]) -> list[SecretStr]:
        # A blank key would match a blank bearer token: refuse it rather than guess.
        if any(not key.get_secret_value().strip() for key in keys):
            raise ValueError("MEMSTREAM_RECALL_API_KEYS holds an empty or blank key")
        return keys

    def required_keys(self) -> list[SecretStr]:
        """The recall API's keys; empty only where auth is explicitly disabled and no key set.

        Raises ValueError when there are no keys and auth is not disabled, so the API
        refuses to start rather than serve every user's memories to anyone.
        """
        if not self.keys and self.key_file is None and not self.auth_disabled:
            raise ValueError(
                "the recall API needs keys: set MEMSTREAM_RECALL_API_KEYS (a JSON list) or "
                "MEMSTREAM_API_KEY_FILE, or "
                "MEMSTREAM_RECALL_AUTH_DISABLED=true to serve it unauthenticated"
            )
        return list(self.keys)  # configured keys apply even with the flag on


class McpSettings(BaseModel):
    """The MCP server (`memstream mcp`)."""

    model_config = _group("MCP_")

    user_keys: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Over HTTP: user id -> the key that user's MCP client sends as a bearer "
        "token (JSON object); the key decides whose memories a session reaches.",
    )
    api_key: SecretStr | None = Field(
        default=None,
        description="The key the MCP server presents to the recall API (a tenant's key "
        "confines it to that tenant's users); none: the first of `MEMSTREAM_RECALL_API_KEYS`.",
    )


class ObservabilitySettings(BaseModel):
    """Traces, metrics and logs."""

    model_config = _group("")

    otlp_traces_endpoint: str = Field(
        default="",
        validation_alias=AliasChoices(
            "MEMSTREAM_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ),
        description="OTLP/HTTP endpoint for traces (the standard OTEL_ variables work too); "
        "empty: no tracing.",
    )
    metrics_port: int = Field(
        default=9108, ge=0, le=65535, description="Workers' /metrics and probes port."
    )
    log_level: LogLevel = Field(default="INFO", description="Python log level.")

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_case(cls, level: object) -> object:
        # Python's level names are upper case; `info` has always been accepted too.
        return level.upper() if isinstance(level, str) else level


class Handoff(BaseModel):
    """What a parent process hands its children (`serve` its API workers, a test its worker):
    never an operator's to set, so no documentation lists these."""

    model_config = _group("")

    embed_server: Path | None = Field(
        default=None,
        description="The Unix socket of a model server to embed through instead of model "
        "processes of this process's own (`serve` sets it for its workers with "
        "`MEMSTREAM_API_SHARED_MODEL`).",
    )
    index_server: Path | None = Field(
        default=None,
        description="The Unix socket of an index server (`adapters.qdrant.index_server`) to "
        "use as the vector index instead of opening one (`up` sets it for its API process "
        "with `MEMSTREAM_UP_API_PROCESS`).",
    )
    api_reuse_port: bool = Field(
        default=False,
        description="Bind the API port with SO_REUSEPORT so several processes share it "
        "(`serve` sets it for its workers).",
    )
    api_start_together: Path | None = Field(
        default=None,
        description="A directory where the API processes of one `serve` wait for each other: "
        "each opens the port only once every one is warm (`serve` sets it for its workers).",
    )
    fault_point: str = Field(
        default="",
        description="Tests only: 'point:n' makes the process SIGKILL itself the n-th time it "
        "reaches the point (memstream.faults).",
    )

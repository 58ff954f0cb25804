"""All configuration, read once from the environment (prefix `MEMSTREAM_`) and passed down."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """memstream's settings. Empty URLs mean "start the embedded part instead"."""

    model_config = SettingsConfigDict(env_prefix="MEMSTREAM_", env_file=None, extra="ignore")

    # Broker and stores. Empty -> the embedded stack provides it.
    kafka_bootstrap: str = ""
    topic_prefix: str = ""
    consumer_group: str = "memstream"
    redis_url: str = ""
    qdrant_url: str = ""
    qdrant_api_key: SecretStr | None = None
    qdrant_collection: str = "memstream_memories"
    data_dir: Path = Path(".memstream")

    # LLM: empty base URL -> the deterministic offline backend.
    llm_base_url: str = ""
    llm_model: str = "gpt-4o-mini"
    llm_api_key: SecretStr = SecretStr("")
    llm_timeout_s: float = Field(default=30.0, gt=0)
    llm_max_retries: int = Field(default=3, ge=0, le=10)

    # Embeddings: "local" (sentence-transformers model shipped in a wheel), "openai", "hashing".
    embedder: str = Field(default="local", pattern="^(local|openai|hashing)$")
    embedding_base_url: str = ""
    embedding_model: str = "text-embedding-3-small"
    embedding_api_key: SecretStr = SecretStr("")
    embedding_dim: int = Field(default=384, gt=0)
    embed_batch_size: int = Field(default=64, gt=0)
    # Records the segmenter takes per batch; bigger batches amortise per-batch store writes.
    consume_batch_size: int = Field(default=1024, gt=0, le=10_000)

    # Windows and segments.
    default_tz: str = "UTC"
    session_idle_timeout_s: float = Field(default=1800.0, gt=0)
    clock_grace_s: float = Field(default=3600.0, ge=0)
    clock_interval_s: float = Field(default=60.0, gt=0)
    segment_messages: int = Field(default=2, ge=1, le=64)
    history_window: int = Field(default=3, ge=0, le=20)
    max_text_chars: int = Field(default=16_000, gt=0)

    # Recall.
    recall_api_keys: list[SecretStr] = Field(default_factory=list)
    recall_leaf_top_k: int = Field(default=20, gt=0, le=200)
    recall_dense_weight: float = Field(default=0.9, ge=0, le=1)
    recall_max_query_chars: int = Field(default=2000, gt=0)
    recall_default_max_tokens: int = Field(default=2000, gt=0)
    recall_max_tokens_limit: int = Field(default=16_000, gt=0)
    api_host: str = "127.0.0.1"
    api_port: int = Field(default=8080, ge=0, le=65535)

    # Observability.
    metrics_port: int = Field(default=9108, ge=0, le=65535)
    log_level: str = "INFO"

"""The whole of memstream running for the explorer's browser tests: the write path and the
recall API in one process on their own event loop in a thread (so the tests can drive
Playwright's synchronous API), after one ingest of a LoCoMo conversation's first sessions
and of a user whose messages are hostile markup.

    with LiveExplorer(settings, tmp_path) as live:
        live.url        # http://127.0.0.1:PORT (the API and /ui)
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from memstream.entrypoints.embedded.caught_up import wait_caught_up
from memstream.entrypoints.embedded.ingest import publish_file
from memstream.entrypoints.runner import EVERYTHING, run_parts
from memstream.settings import Settings
from memstream_lab.locomo import conversation_events, load_conversation, locomo_data_dir

CONVERSATION = "30"
LOCOMO_USER = f"locomo-{CONVERSATION}"
SESSIONS = 6  # 119 messages over eight weeks: every level, in a fraction of the whole's time
HOSTILE_USER = "hostile-1"
LONG_WORD = "Z" * 5_000
HOSTILE_TEXTS = [
    '<img src=x onerror="window.__pwned=1"> I <b>love</b> pottery',
    "<script>window.__pwned=2</script> my favourite band is on tour",
    "[my site](javascript:window.__pwned=3) and javascript:alert(document.domain)",
    f'"><svg onload="window.__pwned=4"> a very long word: {LONG_WORD}',
    "مرحبا، أنا أحب القهوة في الصباح وأعيش في القاهرة",
    "שלום, אני גר בתל אביב ואוהב לרוץ על החוף",
]
READY_TIMEOUT_S = 420.0


def hostile_events(user: str) -> list[dict[str, Any]]:
    """One session of hostile turns from the user, each answered by an assistant."""
    start = datetime(2024, 2, 5, 10, 0, tzinfo=UTC)
    events: list[dict[str, Any]] = []
    for i, text in enumerate(HOSTILE_TEXTS):
        for role, said in (("user", text), ("assistant", f"Noted ({i}).")):
            seq = len(events)
            events.append(
                {
                    "type": "turn.v1",
                    "event_id": f"h{seq}",
                    "user_id": user,
                    "session_id": "hostile-session",
                    "seq": seq,
                    "speaker": role,
                    "role": role,
                    "text": said,
                    "ts": (start + timedelta(minutes=seq)).isoformat(),
                    "tz": "UTC",
                }
            )
    end = start + timedelta(minutes=len(events))
    close = {"type": "session_end.v1", "user_id": user, "session_id": "hostile-session"}
    return [*events, {**close, "ts": end.isoformat()}]


def events_file(path: Path) -> Path:
    conv = load_conversation(locomo_data_dir() / f"{CONVERSATION}.json")
    conv = replace(conv, sessions=conv.sessions[:SESSIONS])
    events = conversation_events(conv, LOCOMO_USER) + hostile_events(HOSTILE_USER)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


class LiveExplorer:
    def __init__(self, settings: Settings, data: Path) -> None:
        self.settings = settings
        self.url = f"http://127.0.0.1:{settings.api.port}"
        self._events = events_file(data / "events.jsonl")
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="explorer-stack", daemon=True)

    def __enter__(self) -> LiveExplorer:
        self._thread.start()
        if not self._ready.wait(READY_TIMEOUT_S) or self._error is not None:
            self.__exit__(None, None, None)
            raise RuntimeError("the explorer's stack did not come up") from self._error
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as error:  # reported to the test thread by __enter__
            self._error = error
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with run_parts(self.settings, EVERYTHING, fast_rebalance=True) as running:
            await publish_file(
                self._events,
                catalog=running.container.catalog,
                bootstrap=self.settings.broker.bootstrap,
                show_progress=False,
            )
            users = [LOCOMO_USER, HOSTILE_USER]
            await wait_caught_up(running.container, users, timeout_s=300)
            self._ready.set()
            await self._stop.wait()

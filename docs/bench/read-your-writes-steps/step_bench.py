"""Time from a segmenter batch's start to its progress mark, and to its end, on the embedded
Redis and broker (the real KafkaPublisher, linger and acks included); fakes for the embedder
and index. Usage: python step_bench.py BOOTSTRAP REDIS_URL USERS ROUNDS LABEL HISTORY
(run.py runs it). Each batch: USERS users, one turn each published with flush (one L1
each), as the read-your-writes benchmark sends them; two warm-up batches left out."""
import asyncio, sys, time, uuid, json, statistics
from datetime import UTC, datetime, timedelta
import redis.asyncio as aioredis
from tests.unit.fakes import FakeEmbedder, FakeIndex, FakeTree
from memstream.adapters.kafka.producer import KafkaPublisher
from memstream.adapters.llm.offline import OfflineLanguageModel
from memstream.adapters.redis.tree import RedisTree
from memstream.contracts.records import Consumed, RawEvent
from memstream.domain.models import Turn
from memstream.domain.windows import WindowRules
from memstream.segmenter.handler import Segmenter, Topics

async def main(bootstrap, url, users, rounds, label):
    client = aioredis.Redis.from_url(url)
    ns = "stepbench-" + uuid.uuid4().hex[:8]
    tree = RedisTree(client, ns)
    pub = KafkaPublisher.for_bootstrap(bootstrap)
    await pub.start()
    marked = []
    seg = Segmenter(tree=tree, index=FakeIndex(FakeTree()), embedder=FakeEmbedder(),
        llm=OfflineLanguageModel(), publisher=pub,
        topics=Topics(memories="stepbench-memories", windows="stepbench-windows"),
        forget=None, rules=WindowRules(), history_window=int(sys.argv[6]),
        on_progress=lambda m: marked.append(time.perf_counter()))
    t0 = datetime.now(UTC)
    to_mark, to_end, cpu = [], [], []
    offset = 0
    for r in range(rounds + 2):
        batch = []
        for u in range(users):
            e = Turn(f"e{r}-{u}", f"user{u}", "s", r, "Ana", "user", f"Ana says thing {r} {u}",
                     t0 + timedelta(seconds=r), flush=True)
            batch.append(Consumed(e, RawEvent(b"{}", "turns", 0, offset, time.time())))
            offset += 1
        marked.clear()
        start, cpu0 = time.perf_counter(), time.process_time()
        await seg.handle_batch(batch)
        end, cpu1 = time.perf_counter(), time.process_time()
        if r >= 2:  # warm-up rounds left out
            to_mark.append((marked[0] - start) * 1000)
            to_end.append((end - start) * 1000)
            cpu.append((cpu1 - cpu0) * 1000 / users)
    await pub.stop()
    await client.aclose()
    print(json.dumps({"label": label, "users": users, "to_mark_ms_median": round(statistics.median(to_mark), 1),
                      "to_end_ms_median": round(statistics.median(to_end), 1), "cpu_ms_per_turn": round(statistics.median(cpu), 2)}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))

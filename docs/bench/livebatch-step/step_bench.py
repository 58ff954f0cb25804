"""Adapted from ../read-your-writes-steps/step_bench.py: a segmenter batch's
start to its progress mark and to its end, on the embedded Redis and broker, the publisher
the worker builds (its linger), fakes for the embedder and index.
Usage: python step_bench.py BOOTSTRAP REDIS_URL USERS ROUNDS LABEL"""
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
    build = getattr(KafkaPublisher, "for_service", KafkaPublisher.for_bootstrap)
    pub = build(bootstrap)
    await pub.start()
    marked = []
    seg = Segmenter(tree=tree, index=FakeIndex(FakeTree()), embedder=FakeEmbedder(),
        llm=OfflineLanguageModel(), publisher=pub,
        topics=Topics(memories="stepbench-memories", windows="stepbench-windows"),
        forget=None, rules=WindowRules(), history_window=0,
        on_progress=lambda m, t=None: marked.append(time.perf_counter()))
    t0 = datetime.now(UTC)
    to_mark, to_end, cpu = [], [], []
    offset = 0
    for r in range(rounds + 2):
        batch = []
        for u in range(users):
            e = Turn(f"e{r}-{u}", f"user{u}", "s", r, "Ana", "other", f"Ana says thing {r} {u}",
                     t0 + timedelta(seconds=r))
            batch.append(Consumed(e, RawEvent(b"{}", "turns", 0, offset, time.time())))
            offset += 1
        marked.clear()
        start, cpu0 = time.perf_counter(), time.process_time()
        await seg.handle_batch(batch)
        end, cpu1 = time.perf_counter(), time.process_time()
        if r >= 2:
            to_mark.append((marked[0] - start) * 1000)
            to_end.append((end - start) * 1000)
            cpu.append((cpu1 - cpu0) * 1000)
        await asyncio.sleep(0.02)
    await pub.stop()
    await client.aclose()
    med = statistics.median
    print(json.dumps({"label": label, "users": users, "to_mark_ms": round(med(to_mark), 2),
                      "mark_to_end_ms": round(med([b - a for a, b in zip(to_mark, to_end)]), 2),
                      "to_end_ms": round(med(to_end), 2), "cpu_ms_batch": round(med(cpu), 2)}), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))

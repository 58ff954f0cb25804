"""How the publishers are built: a service's awaited publishes are not held back."""

from __future__ import annotations

from memstream.adapters.kafka.producer import KafkaPublisher


def _linger_s(publisher: KafkaPublisher) -> float:
    return float(publisher.producer._message_accumulator._linger_time)


async def test_a_services_publisher_sends_at_once_and_a_tools_lingers_as_before() -> None:
    service = KafkaPublisher.for_service("localhost:9092")
    tool = KafkaPublisher.for_bootstrap("localhost:9092")
    try:
        assert _linger_s(service) == 0.0
        assert _linger_s(tool) == 0.005
    finally:
        for publisher in (service, tool):
            await publisher.stop()

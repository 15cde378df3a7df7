"""Dagster resources for the Kafka cluster a topology reads and writes."""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from dagster_kstreams.kafka.admin import KafkaAdmin


class KafkaResource(ConfigurableResource):
    """Where Kafka is and how to reach it. ``client_config`` goes to librdkafka as is (SASL/SSL)."""

    bootstrap_servers: str = Field(default="127.0.0.1:9092", description="Kafka bootstrap servers, host:port[,host:port]")
    client_config: dict[str, str] = Field(
        default_factory=dict,
        description="Extra librdkafka settings, e.g. security.protocol, sasl.mechanism, ssl.ca.location",
    )
    admin_timeout_s: float = Field(default=10.0, description="Timeout of each admin request, in seconds")

    def admin(self) -> KafkaAdmin:
        return KafkaAdmin(self.bootstrap_servers, self.client_config, timeout_s=self.admin_timeout_s)

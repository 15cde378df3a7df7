"""Dagster resources: the Kafka cluster a topology reads and writes, and Spark through dagster-pyspark.

Secrets go through ``dagster.EnvVar``::

    KafkaResource(
        bootstrap_servers="broker:9093",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="streams",
        sasl_password=dg.EnvVar("KAFKA_PASSWORD"),
    )

Dagster shows an ``EnvVar`` field by the variable's name only; nothing here logs a setting's value.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from dagster import ConfigurableResource, EnvVar, InitResourceContext
from dagster_pyspark import PySparkResource
from pydantic import Field, PrivateAttr, field_validator

from dagster_kstreams.kafka.admin import KafkaAdmin
from dagster_kstreams.spark.session import DEFAULT_MASTER, build_spark_session, check_master

__all__ = ["KafkaResource", "KStreamsSparkResource"]

# librdkafka names of the settings that have their own field (Java clients use the same names).
_FIELD_SETTINGS = {
    "security_protocol": "security.protocol",
    "sasl_mechanism": "sasl.mechanism",
    "sasl_username": "sasl.username",
    "sasl_password": "sasl.password",
    "ssl_ca_location": "ssl.ca.location",
    "ssl_certificate_location": "ssl.certificate.location",
    "ssl_key_location": "ssl.key.location",
    "ssl_key_password": "ssl.key.password",
}


_JAAS_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def _jaas_quote(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"')


class KafkaResource(ConfigurableResource):
    """Where Kafka is and how to reach it (any cluster; SASL and SSL through the fields or ``client_config``)."""

    bootstrap_servers: str = Field(default="127.0.0.1:9092", description="Kafka bootstrap servers, host:port[,host:port]")
    security_protocol: Optional[str] = Field(default=None, description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL")
    sasl_mechanism: Optional[str] = Field(default=None, description="PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, ...")
    sasl_username: Optional[str] = Field(default=None, description="SASL user name")
    sasl_password: Optional[str] = Field(default=None, description="SASL password; pass dagster.EnvVar('...')")
    ssl_ca_location: Optional[str] = Field(default=None, description="CA certificate file")
    ssl_certificate_location: Optional[str] = Field(default=None, description="Client certificate file")
    ssl_key_location: Optional[str] = Field(default=None, description="Client private key file")
    ssl_key_password: Optional[str] = Field(default=None, description="Client key password; pass dagster.EnvVar('...')")
    client_config: dict[str, str] = Field(
        default_factory=dict,
        description="Any other client setting, as librdkafka names it (it wins over the fields above)",
    )
    java_client_config: dict[str, str] = Field(
        default_factory=dict,
        description="Settings for Spark's Kafka source and sink (Java client names, e.g. sasl.jaas.config); "
                    "they win over the ones derived from the fields above",
    )
    admin_timeout_s: float = Field(default=10.0, description="Timeout of each admin request, in seconds")

    def client_settings(self) -> dict[str, str]:
        """Every client setting, ``bootstrap.servers`` included. Contains secrets: never log it."""
        settings = {"bootstrap.servers": self.bootstrap_servers}
        for field_name, setting in _FIELD_SETTINGS.items():
            value = getattr(self, field_name)
            if value is not None:
                settings[setting] = str(value)
        settings.update({str(key): str(value) for key, value in self.client_config.items()})
        return settings

    def java_client_settings(self) -> dict[str, str]:
        """The same connection for Kafka's Java client (Spark's Kafka source and sink). Contains secrets.

        librdkafka and the Java client name SASL credentials and CA files differently: user name and
        password become ``sasl.jaas.config`` (PLAIN and SCRAM), and a CA file becomes a PEM trust store.
        """
        settings = {"bootstrap.servers": self.bootstrap_servers}
        if self.security_protocol:
            settings["security.protocol"] = self.security_protocol
        if self.sasl_mechanism:
            settings["sasl.mechanism"] = self.sasl_mechanism
        module = _JAAS_LOGIN_MODULES.get((self.sasl_mechanism or "").upper())
        if module and self.sasl_username is not None and self.sasl_password is not None:
            settings["sasl.jaas.config"] = (
                f'{module} required username="{_jaas_quote(self.sasl_username)}" '
                f'password="{_jaas_quote(self.sasl_password)}";')
        if self.ssl_ca_location:
            settings["ssl.truststore.type"] = "PEM"
            settings["ssl.truststore.location"] = self.ssl_ca_location
        settings.update({str(key): str(value) for key, value in self.java_client_config.items()})
        return settings

    def admin(self) -> KafkaAdmin:
        settings = self.client_settings()
        bootstrap = settings.pop("bootstrap.servers")
        return KafkaAdmin(bootstrap, settings, timeout_s=self.admin_timeout_s)

    def describe_safely(self) -> str:
        """What may be logged: the servers and which settings are set, not their values."""
        names = sorted(key for key in self.client_settings() if key != "bootstrap.servers")
        return f"Kafka at {self.bootstrap_servers}" + (f" with {', '.join(names)}" if names else "")


class KStreamsSparkResource(PySparkResource):
    """dagster-pyspark's ``PySparkResource`` with Spark's Kafka connector on the classpath.

    ``master`` is ``local[N]`` with two task slots per core by default (:func:`~dagster_kstreams.spark.session.default_master`:
    a worker's tasks are queries of their own, whose micro-batches would otherwise wait for each other's
    slot); any master Spark accepts works (``spark://``, ``k8s://``,
    ``yarn``), and a Spark Connect server (``sc://HOST:PORT``: README, "Beyond one machine"); a URL
    Spark would not take fails when the resource is configured. ``spark_config`` takes any ``spark.*`` setting; ``spark.jars`` is
    merged with the connector's jars, which are resolved when a run starts (not when definitions load).
    """

    master: str = Field(default=DEFAULT_MASTER, description="Spark master URL (default: two task slots per core)")
    spark_config: dict[str, Any] = Field(default_factory=dict, description="Extra spark.* settings")
    app_name: str = Field(default="dagster-kstreams", description="Spark application name")
    _session_timing: Optional[tuple[float, float]] = PrivateAttr(default=None)

    @field_validator("master", mode="before")
    @classmethod
    def _a_master_spark_accepts(cls, master: str) -> str:
        # Checked when configured, so that a typo fails at load, not in each worker run;
        # an EnvVar is only known at run time, where spark_conf checks it.
        return master if isinstance(master, EnvVar) else check_master(master)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        started = time.time()
        self._spark_session = build_spark_session(self.master, self.spark_config, app_name=self.app_name)
        self._session_timing = (started, time.time())

    @property
    def session_timing(self) -> Optional[tuple[float, float]]:
        """When this run began building its SparkSession and when it was up (epoch seconds), for
        the worker's start breakdown; None before the resource is set up."""
        return self._session_timing

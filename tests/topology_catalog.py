"""Topologies written with dagster_kstreams' DSL: ``CATALOG``, name -> the function that builds one.

The functions live in one module per family (``topology_catalog_<family>.py``: stateless operators,
repartitions, windows, stream joins, tables, the Processor API, cogroup, store suppliers). Each one is built again,
under the same name and in the same way, with Kafka Streams' own DSL in the family's Java twin
(tests/oracle/src/main/java/kstreams/oracle/<Family>Catalog.java, gathered by TopologyCatalog.java);
the differential test (tests/test_describe_oracle.py) compares the two describe() strings byte for
byte. Keep each pair in step: same operations, same order, same names, same configuration.

Static factories whose Java name equals a field name take a trailing underscore in the DSL
(``Repartitioned.number_of_partitions(2)``, ``Suppressed.BufferConfig.max_records(1000)``).

Keys and values are strings; a record value is a comma-separated row such as "alice,fr,42"
(user, country, amount), so that the functions mean the same thing on both sides.
"""

from __future__ import annotations

from topology_catalog_cogroup import ENTRIES as COGROUP
from topology_catalog_entries import merged
from topology_catalog_optimization import ENTRIES as OPTIMIZATION
from topology_catalog_processor_api import ENTRIES as PROCESSOR_API
from topology_catalog_repartitions import ENTRIES as REPARTITIONS
from topology_catalog_self_joins import ENTRIES as SELF_JOINS
from topology_catalog_stateless import ENTRIES as STATELESS
from topology_catalog_store_suppliers import ENTRIES as STORE_SUPPLIERS
from topology_catalog_stream_joins import ENTRIES as STREAM_JOINS
from topology_catalog_tables import ENTRIES as TABLES
from topology_catalog_windows import ENTRIES as WINDOWS

CATALOG = merged(STATELESS, REPARTITIONS, WINDOWS, STREAM_JOINS, TABLES, PROCESSOR_API, COGROUP, OPTIMIZATION,
                 SELF_JOINS, STORE_SUPPLIERS)

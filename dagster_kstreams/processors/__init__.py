"""The operators of a topology, engine-neutral: what each processor does with a record.

Modelled on Kafka Streams' ``kstream/internals``: one small class per operator, one protocol
(:mod:`.base`: process a record, flush at a batch's end, a state slot if stateful), found by
kind through a registry. Nothing here imports Spark; the Spark layer feeds a
:class:`~.program.SubtopologyProgram` its records and keeps its state.

====================  ===================================================================
module                what lives there
====================  ===================================================================
``errors``            ``UnsupportedTopologyError``, ``ProcessingError``
``records``           ``RecordContext``, ``Output`` (sink records), ``DROPPED_LATE_TOPIC``
``state``             ``GroupState``: one source key's store slots; ``ABSENT``
``base``              the ``Processor`` protocol, ``StoreProcessor``, the kind registry
``stateless``         sources, sinks, filter/map/flat_map/peek/branch/merge
``table_steps``       the KTable operations that keep no store: filter, map_values, to_stream
``aggregations``      count/reduce/aggregate, ``to_table``, table sources (key-value stores)
``windows``           time and sliding windowed aggregations (``window_store``: their algorithms)
``sessions``          session-windowed aggregations and their store
``own_stream_time``   windowed aggregations with their own stream time (after a filter, a cogroup's)
``windowed_tables``   what a windowed aggregation's table forwards: windowed keys, old values on request
                      (``windowed_table_reads``: which windowed tables joins and re-groupings read)
``versioned_tables``  tables in a versioned store (``version_history``: a key's versions)
``table_joins``       stream-table and table-table joins (``grace_joins``: with a grace period)
``table_old_values``  the old value behind a table update (a table filter that sends old values, a
                      suppression); the builder of a table's filter/map_values
``table_step_stores`` a table filter/map_values that keeps a store of its own (``keeps_own_store``:
                      after a versioned table, into a versioned store, behind a windowed table or a
                      suppression when its old values are read, or cached before a stream-stream join;
                      ``windowed_store_keys``: the key serde and keying a store of windows needs)
``table_behind``      the table whose updates reach a processor, and who reads the old values it sends
                      (``table_of``: the one walk up a table's steps to its writer)
``table_regroup``     ``KTable.group_by`` with count/reduce/aggregate (``changes``: old and new values)
``fk_joins``          foreign-key table-table joins (``fk_join_wire``: their topics' wire format)
``stream_joins``      stream-stream joins (``join_buffers``: their window and outer-join stores;
                      ``join_feed_caches``: which record caches may feed them; ``stream_self_join``:
                      topology.optimization's single-store self-join)
``suppress``          ``KTable.suppress``: the suppression buffer and its processor
``user_processors``   ``KStream.process``/``process_values``: user processors (``user_processor_context``:
                      what they get in ``init``; ``punctuation``: their schedules and the task's
                      stream time; ``user_stores``: their own stores, key-value there,
                      ``user_window_store``, ``user_session_store``: their window and session
                      stores, over ``user_time_store``)
``task_state``        the state of a whole task, for task-grouped sub-topologies
``program``           ``SubtopologyProgram``: the fused pass over a sub-topology's processors
``build``             topology view -> program, with the definition-time checks
====================  ===================================================================
"""

package kstreams.oracle;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.query.QueryResult;
import org.apache.kafka.streams.query.StateQueryRequest;
import org.apache.kafka.streams.query.StateQueryResult;
import org.apache.kafka.streams.query.VersionedKeyQuery;
import org.apache.kafka.streams.state.VersionedRecord;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * What the processing mains share: their settings, running an app until it has consumed its input
 * and printing what it gave, and reading its stores.
 */
final class KafkaStreamsRuns {
    private KafkaStreamsRuns() {
    }

    /** String serdes by default, commits every 500 ms, one replica; creates the state directory. */
    static Properties properties(String bootstrap, String applicationId, String stateDir) throws IOException {
        Files.createDirectories(Path.of(stateDir));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        return props;
    }

    /** The topics whose end the app must reach, or null while they do not all exist yet. */
    interface WatchedTopics {
        List<String> get() throws Exception;
    }

    /** What a main prints once its app has consumed its input (the app still runs: its stores can be read). */
    interface Results {
        String of(KafkaStreams streams) throws Exception;
    }

    /**
     * Runs {@code topology} as the app {@code applicationId} (settings: {@link #properties}) until it
     * has consumed the watched topics to their end ({@link #waitUntilConsumed}), prints one line of
     * {@code results} and closes the app, also when it failed or timed out.
     */
    static void runUntilConsumed(Topology topology, String bootstrap, String applicationId, String stateDir,
                                 WatchedTopics watched, Duration timeout, Results results) throws Exception {
        runUntilConsumed(topology, properties(bootstrap, applicationId, stateDir), watched, timeout, results);
    }

    /** {@link #runUntilConsumed} with the app's own settings: {@link #properties} and what a main adds. */
    static void runUntilConsumed(Topology topology, Properties props, WatchedTopics watched, Duration timeout,
                                 Results results) throws Exception {
        String bootstrap = props.getProperty(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG);
        String applicationId = props.getProperty(StreamsConfig.APPLICATION_ID_CONFIG);
        KafkaStreams streams = new KafkaStreams(topology, props);
        streams.start();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            waitUntilConsumed(admin, streams, applicationId, watched, timeout);
            System.out.println(results.of(streams));
        } finally {
            close(streams, Duration.ofSeconds(30));
        }
    }

    /**
     * Closes the app and leaves its consumer group: the next process on the same application id
     * (a test's next phase, a rerun) then joins at once, instead of waiting for the broker to drop
     * this member when its session times out (45 s by default), as a plain {@code close} would.
     */
    static void close(KafkaStreams streams, Duration timeout) {
        streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                                  .withTimeout(timeout));
    }

    /**
     * A failed stream thread ends the process at once, with its exception on stderr and exit code 1, rather
     * than the run waiting out its timeout for input that will never be consumed.
     */
    static void failFast(KafkaStreams streams) {
        streams.setUncaughtExceptionHandler(exception -> {
            exception.printStackTrace();
            System.err.flush();
            Runtime.getRuntime().halt(1);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
    }

    /** JSON {"describe": topology.describe()}, what most mains print. */
    static String describeJson(Topology topology) {
        return "{\"describe\": " + Json.quote(topology.describe().toString()) + "}";
    }

    /**
     * Returns once the app has committed offsets at the end of every watched topic twice in a row
     * (so its record caches were flushed by the last commit).
     */
    static void waitUntilConsumed(Admin admin, KafkaStreams streams, String applicationId, WatchedTopics watched,
                                  Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        int quietChecks = 0;
        String behind = "no watched topic yet";
        while (System.nanoTime() < deadline) {
            Thread.sleep(500);
            KafkaStreams.State state = streams.state();
            if (state == KafkaStreams.State.ERROR || state == KafkaStreams.State.PENDING_ERROR
                    || state == KafkaStreams.State.NOT_RUNNING) {
                throw new IllegalStateException("Kafka Streams stopped in state " + state + " before consuming its input");
            }
            if (state != KafkaStreams.State.RUNNING) {
                quietChecks = 0;
                behind = "the app was " + state;
                continue;
            }
            List<String> topics = watched.get();
            if (topics == null) {
                continue;
            }
            Map<TopicPartition, OffsetSpec> request = new HashMap<>();
            for (var description : admin.describeTopics(topics).allTopicNames().get().values()) {
                description.partitions().forEach(p ->
                    request.put(new TopicPartition(description.name(), p.partition()), OffsetSpec.latest()));
            }
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = admin.listOffsets(request).all().get();
            Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(applicationId).partitionsToOffsetAndMetadata().get();
            boolean consumed = true;
            for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> end : ends.entrySet()) {
                long endOffset = end.getValue().offset();
                if (endOffset == 0) {
                    continue;
                }
                OffsetAndMetadata offset = committed.get(end.getKey());
                // Repartition topics are purged up to the committed offset: compare with the end.
                if (offset == null || offset.offset() < endOffset) {
                    consumed = false;
                    behind = end.getKey() + " committed " + (offset == null ? "nothing" : offset.offset())
                        + " of " + endOffset;
                    break;
                }
            }
            // Consumed to the end twice in a row: the caches were flushed by the last commit.
            quietChecks = consumed ? quietChecks + 1 : 0;
            if (quietChecks >= 2) {
                return;
            }
        }
        throw new IllegalStateException("Kafka Streams did not consume its input within " + timeout
                                        + " (last check: " + behind + ")");
    }

    /**
     * Creates {@code topics} and returns once the broker's metadata lists them: an app started before
     * that can find a source topic missing in its first rebalance and stop in ERROR.
     */
    static void createTopics(Admin admin, List<NewTopic> topics) throws Exception {
        admin.createTopics(topics).all().get();
        List<String> names = topics.stream().map(NewTopic::name).toList();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            try {
                admin.describeTopics(names).allTopicNames().get();
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof UnknownTopicOrPartitionException) || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    static Map<String, String> storeContent(KafkaStreams streams, String store) {
        ReadOnlyKeyValueStore<String, Object> view = streams.store(
            StoreQueryParameters.fromNameAndType(store, QueryableStoreTypes.keyValueStore()));
        Map<String, String> content = new TreeMap<>();
        try (KeyValueIterator<String, Object> entries = view.all()) {
            while (entries.hasNext()) {
                KeyValue<String, Object> entry = entries.next();
                content.put(entry.key, String.valueOf(entry.value));
            }
        }
        return content;
    }

    /**
     * The latest version of each of {@code keys} in the versioned store {@code store}, as
     * "value|t" and its timestamp (keys without one, or whose latest version is a tombstone, left
     * out), read with interactive queries v2 (KIP-960: a versioned store has no v1 view).
     */
    static Map<String, String> versionedStoreContent(KafkaStreams streams, String store, List<String> keys) {
        Map<String, String> content = new TreeMap<>();
        for (String key : keys) {
            StateQueryResult<VersionedRecord<String>> result = streams.query(
                StateQueryRequest.inStore(store).withQuery(VersionedKeyQuery.<String, String>withKey(key)));
            for (QueryResult<VersionedRecord<String>> partition : result.getPartitionResults().values()) {
                if (!partition.isSuccess()) {
                    throw new IllegalStateException("querying " + store + " for " + key + ": " + partition.getFailureMessage());
                }
                VersionedRecord<String> latest = partition.getResult();
                if (latest != null) {
                    content.put(key, latest.value() + "|t" + latest.timestamp());
                }
            }
        }
        return content;
    }
}

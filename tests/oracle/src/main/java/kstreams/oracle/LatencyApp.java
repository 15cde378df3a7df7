package kstreams.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The users-per-country example (assets/users_per_country.py) as a long-running Kafka Streams
 * app, for the latency benchmark (bench/latency.py): it runs until a line "stop" (or the end of
 * stdin), then closes and prints one JSON line.
 *
 * <pre>
 * LatencyApp --bootstrap HOST:PORT --state-dir DIR --application-id ID --input TOPIC --output TOPIC
 *            [--commit-interval-ms 100] [--threads 1]
 * </pre>
 *
 * Topology, as the Python one: {@code stream(users).groupBy((id, json) -> json.country).count(
 * Materialized.as("users-per-country-store")).toStream().to(users-per-country)} with String keys,
 * JSON String values ({@code {"user_id", "name", "country", ...}}) and Long counts. Settings:
 * record cache off ({@code statestore.cache.max.bytes=0}), at_least_once, the given commit
 * interval, earliest offset reset.
 *
 * Stdout: {@code {"state": "RUNNING"}} once the app first reaches RUNNING, then at the end
 * {@code {"stopped": true, "seconds": s, "settings": {...}}}.
 */
public final class LatencyApp {
    private LatencyApp() {}

    static final String STORE = "users-per-country-store";
    static final ObjectMapper JSON = new ObjectMapper();

    static String countryOf(String userJson) {
        try {
            return JSON.readTree(userJson).get("country").asText();
        } catch (Exception e) {
            throw new IllegalArgumentException("not a user JSON value: " + userJson, e);
        }
    }

    static Topology usersPerCountry(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((userId, user) -> countryOf(user), Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE)
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = null, stateDir = null, appId = null, input = null, output = null;
        int commitIntervalMs = 100;
        int threads = 1;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--bootstrap": bootstrap = args[++i]; break;
                case "--state-dir": stateDir = args[++i]; break;
                case "--application-id": appId = args[++i]; break;
                case "--input": input = args[++i]; break;
                case "--output": output = args[++i]; break;
                case "--commit-interval-ms": commitIntervalMs = Integer.parseInt(args[++i]); break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (bootstrap == null || stateDir == null || appId == null || input == null || output == null) {
            throw new IllegalArgumentException(
                    "usage: --bootstrap B --state-dir D --application-id A --input I --output O "
                            + "[--commit-interval-ms N] [--threads N]");
        }
        Files.createDirectories(Path.of(stateDir));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitIntervalMs);
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        KafkaStreams streams = new KafkaStreams(usersPerCountry(input, output), props);
        CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running.countDown();
            }
        });
        long started = System.nanoTime();
        streams.start();
        Thread announcer = new Thread(() -> {
            try {
                running.await();
                System.out.println("{\"state\": \"RUNNING\"}");
                System.out.flush();
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
        }, "announce-running");
        announcer.setDaemon(true);
        announcer.start();

        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = stdin.readLine()) != null && !line.trim().equals("stop")) {
            // anything else on stdin is ignored
        }
        boolean wasRunning = running.await(0, TimeUnit.MILLISECONDS);
        String finalState = streams.state().toString();
        KafkaStreamsRuns.close(streams, Duration.ofSeconds(60));
        double seconds = (System.nanoTime() - started) / 1e9;
        System.out.println("{\"stopped\": true, \"reached_running\": " + wasRunning
                + ", \"state_at_stop\": " + Json.quote(finalState)
                + ", \"seconds\": " + String.format("%.3f", seconds)
                + ", \"settings\": {\"statestore.cache.max.bytes\": 0, \"processing.guarantee\": \"at_least_once\""
                + ", \"commit.interval.ms\": " + commitIntervalMs + ", \"num.stream.threads\": " + threads + "}}");
        System.out.flush();
        System.exit(0);
    }
}

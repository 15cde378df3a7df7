package kstreams.oracle;

import java.time.Duration;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Aggregator;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * Windowed cogroups of the marks and the taps (each window's values joined by commas, "null" for a null
 * value) with the record cache on (one store and one cache for both inputs), each window's (session's)
 * aggregate forwarded at the commit, joined under the window's own key: 2 s windows every 1 s (3 s
 * grace) inner-joined with the taps' uncached counts of the same windows (within 1 s, 2 s grace);
 * sessions (1 s gap, 2 s grace) outer-joined with themselves upper-cased where they hold a comma (500 ms,
 * 500 ms grace); 1 s sliding windows (2 s grace) left-joined with themselves upper-cased (500 ms, 500 ms
 * grace). Each output keyed by the window's key, the window in its value. Part of CachedJoinFeedExamples.
 *
 * The Python twin is _cached_cogroup_window_joins() in tests/cached_join_feed_topology.py; keep the two in step.
 */
final class CachedCogroupWindowJoins {
    private CachedCogroupWindowJoins() {}

    static void cachedCogroupWindowJoins(KStream<String, String> marks, KStream<String, String> taps,
                                         String outWindows, String outSessions, String outSliding) {
        Aggregator<String, String, String> adder = (key, value, aggregate) -> aggregate + "," + CachedJoinFeedExamples.s(value);
        TimeWindows hopping = TimeWindows.ofSizeAndGrace(Duration.ofSeconds(2), Duration.ofSeconds(3))
            .advanceBy(Duration.ofSeconds(1));
        KStream<Windowed<String>, Long> tapWindows = taps.groupByKey().windowedBy(hopping)
            .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("tap-cogroup-windows").withCachingDisabled())
            .toStream();
        CogroupedKStream<String, String> cogrouped = marks.groupByKey().cogroup(adder).cogroup(taps.groupByKey(), adder);
        cogrouped.windowedBy(hopping)
            .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>as("cached-cogroup-windows"))
            .toStream()
            .join(tapWindows, (values, tapped) -> values + "/" + tapped,
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)),
                StreamJoined.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 2000L), Serdes.String(),
                                  Serdes.Long()))
            .map((window, value) -> KeyValue.pair(window.key(), window.window().start() + ":" + value))
            .processValues(StampValues::new)
            .to(outWindows);
        KStream<Windowed<String>, String> sessions = cogrouped
            .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .aggregate(() -> "", (key, left, right) -> left + right,
                Materialized.<String, String, SessionStore<Bytes, byte[]>>as("cached-cogroup-sessions"))
            .toStream();
        KStream<Windowed<String>, String> shoutedSessions = sessions
            .filter((session, values) -> values != null && values.chars().filter(c -> c == ',').count() > 1)
            .mapValues(values -> values.toUpperCase());
        sessions.outerJoin(shoutedSessions,
                (values, shouted) -> CachedJoinFeedExamples.s(values) + "/" + CachedJoinFeedExamples.s(shouted),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(500)),
                StreamJoined.with(WindowedSerdes.sessionWindowedSerdeFrom(String.class), Serdes.String(),
                                  Serdes.String()))
            .map((session, value) -> KeyValue.pair(session.key(),
                session.window().start() + "-" + session.window().end() + ":" + value))
            .processValues(StampValues::new)
            .to(outSessions);
        KStream<Windowed<String>, String> sliding = cogrouped
            .windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofSeconds(1), Duration.ofSeconds(2)))
            .aggregate(() -> "", Materialized.<String, String, WindowStore<Bytes, byte[]>>as("cached-cogroup-sliding"))
            .toStream();
        sliding.leftJoin(sliding.mapValues(values -> values.toUpperCase()),
                (values, shouted) -> values + "/" + CachedJoinFeedExamples.s(shouted),
                JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(500), Duration.ofMillis(500)),
                StreamJoined.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 1000L), Serdes.String(),
                                  Serdes.String()))
            .map((window, value) -> KeyValue.pair(window.key(), window.window().start() + ":" + value))
            .processValues(StampValues::new)
            .to(outSliding);
    }
}

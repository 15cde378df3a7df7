package kstreams.oracle;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.apache.kafka.common.utils.Utils;

/**
 * Kafka's own key partitioning, for the differential test of dagster_kstreams.kafka.partitioner.
 * Argument: the number of partitions. Stdin: one key per line, hex-encoded (an empty line is
 * the empty key). Stdout: "<murmur2 as signed int> <partition>" per key, in order.
 */
public final class Murmur2Partitions {
    private Murmur2Partitions() {}

    public static void main(String[] args) throws IOException {
        int numPartitions = Integer.parseInt(args[0]);
        HexFormat hex = HexFormat.of();
        StringBuilder out = new StringBuilder();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII))) {
            String line;
            while ((line = in.readLine()) != null) {
                byte[] key = hex.parseHex(line.trim());
                out.append(Utils.murmur2(key)).append(' ')
                    .append(BuiltInPartitioner.partitionForKey(key, numPartitions)).append('\n');
            }
        }
        System.out.print(out);
    }
}

package kstreams.oracle;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * Iteration order of java.util.HashSet<String>, which Kafka Streams' describe() prints for
 * source topics and store names. Stdin: one case per line, strings as "x" + hex(UTF-8)
 * separated by spaces. Stdout: two lines per case, in the same encoding: the order of a
 * new HashSet<>() filled with add() in input order, then of new HashSet<>(list of the input).
 */
public final class JavaHashSetOrder {
    private JavaHashSetOrder() {}

    public static void main(String[] args) throws IOException {
        HexFormat hex = HexFormat.of();
        StringBuilder out = new StringBuilder();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII))) {
            String line;
            while ((line = in.readLine()) != null) {
                List<String> items = new ArrayList<>();
                for (String token : line.trim().split(" ")) {
                    if (!token.isEmpty()) {
                        items.add(new String(hex.parseHex(token.substring(1)), StandardCharsets.UTF_8));
                    }
                }
                Set<String> added = new HashSet<>();
                items.forEach(added::add);
                write(out, added, hex);
                write(out, new HashSet<>(items), hex);
            }
        }
        System.out.print(out);
    }

    private static void write(StringBuilder out, Set<String> set, HexFormat hex) {
        List<String> tokens = new ArrayList<>();
        for (String s : set) {
            tokens.add("x" + hex.formatHex(s.getBytes(StandardCharsets.UTF_8)));
        }
        out.append(String.join(" ", tokens)).append('\n');
    }
}

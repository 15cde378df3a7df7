package kstreams.oracle;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Prints {name: Topology.describe().toString()} as JSON for the catalog topologies named
 * on the command line ("all" for every one; no arguments lists the names, one per line).
 * A topology whose construction throws maps to "!error: <exception>" so that one bad
 * entry does not hide the others.
 */
public final class DescribeTopologies {
    private DescribeTopologies() {}

    public static void main(String[] args) {
        if (args.length == 0) {
            TopologyCatalog.names().forEach(System.out::println);
            return;
        }
        List<String> names = args.length == 1 && args[0].equals("all")
            ? TopologyCatalog.names() : List.of(args);
        Map<String, String> described = new LinkedHashMap<>();
        for (String name : names) {
            String text;
            try {
                text = TopologyCatalog.build(name).describe().toString();
            } catch (RuntimeException e) {
                text = "!error: " + e;
            }
            described.put(name, text);
        }
        System.out.println(Json.objectOfStrings(described));
    }
}

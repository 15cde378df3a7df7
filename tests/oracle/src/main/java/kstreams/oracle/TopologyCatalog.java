package kstreams.oracle;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.streams.Topology;

/**
 * Topologies built with Kafka Streams' own DSL, by name, gathered from one class per family:
 * StatelessCatalog, RepartitionCatalog, WindowCatalog, StreamJoinCatalog, TableCatalog,
 * ProcessorApiCatalog, CogroupCatalog, OptimizationCatalog, SelfJoinCatalog, StoreSupplierCatalog (whose refused()
 * topologies are buildable by name, outside names()). tests/topology_catalog.py builds each one again, under the same
 * name, with dagster_kstreams (its families in tests/topology_catalog_<family>.py); the describe()
 * strings must match.
 *
 * Keys and values are strings; a record value is a comma-separated row such as "alice,fr,42"
 * (user, country, amount), read with CatalogRow.field.
 */
public final class TopologyCatalog {
    private TopologyCatalog() {}

    private static final Map<String, Supplier<Topology>> TOPOLOGIES = new LinkedHashMap<>();

    static {
        add(StatelessCatalog.topologies());
        add(RepartitionCatalog.topologies());
        add(WindowCatalog.topologies());
        add(StreamJoinCatalog.topologies());
        add(TableCatalog.topologies());
        add(ProcessorApiCatalog.topologies());
        add(CogroupCatalog.topologies());
        add(OptimizationCatalog.topologies());
        add(SelfJoinCatalog.topologies());
        add(StoreSupplierCatalog.topologies());
    }

    /** A family's entries; a name in two families is an error rather than one entry hiding the other. */
    private static void add(Map<String, Supplier<Topology>> family) {
        family.forEach((name, supplier) -> {
            if (TOPOLOGIES.putIfAbsent(name, supplier) != null) {
                throw new IllegalStateException("catalog entry defined in two families: " + name);
            }
        });
    }

    /** Catalog names in definition order (family by family). */
    public static List<String> names() {
        return List.copyOf(TOPOLOGIES.keySet());
    }

    public static Topology build(String name) {
        Supplier<Topology> supplier = TOPOLOGIES.getOrDefault(name, StoreSupplierCatalog.refused().get(name));
        if (supplier == null) {
            throw new IllegalArgumentException("unknown topology: " + name);
        }
        return supplier.get();
    }
}

package kstreams.oracle;

/**
 * A catalog record value is a comma-separated row such as "alice,fr,42" (user, country, amount), so
 * that the lambdas of the catalog mean the same thing on both sides (hence split(sep, -1): Python's
 * str.split keeps trailing empty strings). The Python twin is field() in tests/topology_catalog_entries.py.
 */
final class CatalogRow {
    private CatalogRow() {}

    static String field(String row, int index) {
        return row.split(",", -1)[index];
    }
}

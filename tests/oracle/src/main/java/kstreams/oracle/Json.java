package kstreams.oracle;

import java.util.Iterator;
import java.util.Map;

/** Just enough JSON for the harness output: an object of string values. */
final class Json {
    private Json() {}

    static String quote(String s) {
        StringBuilder out = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            switch (ch) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (ch < 0x20 || ch > 0x7e) {
                        out.append(String.format("\\u%04x", (int) ch));
                    } else {
                        out.append(ch);
                    }
            }
        }
        return out.append('"').toString();
    }

    static String objectOfStrings(Map<String, String> entries) {
        StringBuilder out = new StringBuilder("{");
        Iterator<Map.Entry<String, String>> it = entries.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<String, String> e = it.next();
            out.append("\n  ").append(quote(e.getKey())).append(": ").append(quote(e.getValue()));
            if (it.hasNext()) {
                out.append(',');
            }
        }
        return out.append("\n}").toString();
    }
}

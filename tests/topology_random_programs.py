"""Random DSL programs, rendered twice: as Python (dagster_kstreams) and as Java (Kafka Streams).

Each program is a sequence of steps over a growing pool of streams and tables; every step is
written in both languages from the same choice, so that the two builders must agree on every
name, store, repartition topic and sub-topology (see test_topology_random_oracle.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

W_PY = "JoinWindows.of_time_difference_with_no_grace(timedelta(seconds=5))"
W_JAVA = "JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofSeconds(5))"
STR_PY = ".map_values(lambda v: str(v))"
STR_JAVA = ".mapValues(v -> String.valueOf(v))"


@dataclass
class Program:
    seed: int
    python: list[str] = field(default_factory=list)
    java: list[str] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    counter: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def stream(self, python: str, java: str) -> None:
        var = f"s{len(self.streams)}"
        self.streams.append(var)
        self.python.append(f"{var} = {python}")
        self.java.append(f"KStream<String, String> {var} = {java};")

    def table(self, python: str, java: str) -> None:
        var = f"t{len(self.tables)}"
        self.tables.append(var)
        self.python.append(f"{var} = {python}")
        self.java.append(f"KTable<String, String> {var} = {java};")

    def statement(self, python: str, java: str) -> None:
        self.python.append(python)
        self.java.append(java + ";")

    def python_source(self) -> str:
        return "b = StreamsBuilder()\n" + "\n".join(self.python) + "\n"

    def java_method(self) -> str:
        body = "\n        ".join(self.java)
        return (
            f"    static String t{self.seed}() {{\n"
            f"      try {{\n        StreamsBuilder b = new StreamsBuilder();\n        {body}\n"
            f"        return b.build().describe().toString();\n"
            f"      }} catch (RuntimeException e) {{ return \"!error \" + e.getClass().getSimpleName(); }}\n"
            f"    }}\n"
        )


def _step(p: Program, r: random.Random) -> None:
    s, o = r.choice(p.streams), r.choice(p.streams)
    t = r.choice(p.tables) if p.tables else None
    t2 = r.choice(p.tables) if p.tables else None
    op = r.choice(STEPS)
    if op == "filter":
        p.stream(f"{s}.filter(lambda k, v: True)", f"{s}.filter((k, v) -> true)")
    elif op == "filter_named":
        n = p.fresh("f")
        p.stream(f"{s}.filter_not(lambda k, v: False, Named.as_('{n}'))", f'{s}.filterNot((k, v) -> false, Named.as("{n}"))')
    elif op == "map_values":
        p.stream(f"{s}.map_values(lambda v: v)", f"{s}.mapValues(v -> v)")
    elif op == "map_values_with_key":
        p.stream(f"{s}.map_values(lambda k, v: v)", f"{s}.mapValues((k, v) -> v)")
    elif op == "select_key":
        p.stream(f"{s}.select_key(lambda k, v: v)", f"{s}.selectKey((k, v) -> v)")
    elif op == "map":
        p.stream(f"{s}.map(lambda k, v: (v, k))", f"{s}.map((k, v) -> KeyValue.pair(v, k))")
    elif op == "flat_map":
        p.stream(f"{s}.flat_map(lambda k, v: [(v, k)])", f"{s}.flatMap((k, v) -> java.util.List.of(KeyValue.pair(v, k)))")
    elif op == "flat_map_values":
        p.stream(f"{s}.flat_map_values(lambda v: [v])", f"{s}.flatMapValues(v -> java.util.List.of(v))")
    elif op == "peek":
        p.stream(f"{s}.peek(lambda k, v: None)", f"{s}.peek((k, v) -> {{ }})")
    elif op == "count":
        p.stream(f"{s}.group_by_key().count().to_stream(){STR_PY}", f"{s}.groupByKey().count().toStream(){STR_JAVA}")
    elif op == "count_named":
        n = p.fresh("g")
        p.stream(f"{s}.group_by_key(Grouped.as_('{n}')).count(Named.as_('{n}c')).to_stream(){STR_PY}",
                 f'{s}.groupByKey(Grouped.as("{n}")).count(Named.as("{n}c")).toStream(){STR_JAVA}')
    elif op == "count_materialized":
        p.stream(f"{s}.group_by_key().count(Materialized.with_(Serdes.String(), Serdes.Long())).to_stream(){STR_PY}",
                 f"{s}.groupByKey().count(Materialized.with(Serdes.String(), Serdes.Long())).toStream(){STR_JAVA}")
    elif op == "count_store":
        n = p.fresh("store")
        p.stream(f"{s}.group_by_key().count(Materialized.as_('{n}')).to_stream(){STR_PY}",
                 f'{s}.groupByKey().count(Materialized.as("{n}")).toStream(){STR_JAVA}')
    elif op == "reduce":
        p.stream(f"{s}.group_by_key().reduce(lambda a, v: v).to_stream()", f"{s}.groupByKey().reduce((a, v) -> v).toStream()")
    elif op == "aggregate":
        p.stream(f"{s}.group_by_key().aggregate(lambda: '', lambda k, v, a: a).to_stream()",
                 f'{s}.groupByKey().aggregate(() -> "", (k, v, a) -> a).toStream()')
    elif op == "group_by":
        p.stream(f"{s}.group_by(lambda k, v: v).count().to_stream(){STR_PY}", f"{s}.groupBy((k, v) -> v).count().toStream(){STR_JAVA}")
    elif op == "group_by_grouped":
        n = p.fresh("grp")
        p.stream(f"{s}.group_by(lambda k, v: v, Grouped.as_('{n}')).reduce(lambda a, v: v).to_stream()",
                 f'{s}.groupBy((k, v) -> v, Grouped.as("{n}")).reduce((a, v) -> v).toStream()')
    elif op == "repartition":
        p.stream(f"{s}.repartition()", f"{s}.repartition()")
    elif op == "repartition_named":
        n = p.fresh("rep")
        p.stream(f"{s}.repartition(Repartitioned.as_('{n}').with_number_of_partitions(3))",
                 f'{s}.repartition(Repartitioned.<String, String>as("{n}").withNumberOfPartitions(3))')
    elif op == "merge":
        p.stream(f"{s}.merge({o})", f"{s}.merge({o})")
    elif op in ("join", "left_join", "outer_join") and o != s:
        java = {"join": "join", "left_join": "leftJoin", "outer_join": "outerJoin"}[op]
        p.stream(f"{s}.{op}({o}, lambda a, c: a, {W_PY})", f"{s}.{java}({o}, (a, c) -> a, {W_JAVA})")
    elif op == "join_named" and o != s:
        n = p.fresh("j")
        p.stream(f"{s}.left_join({o}, lambda a, c: a, {W_PY}, StreamJoined.as_('{n}s').with_name('{n}'))",
                 f'{s}.leftJoin({o}, (a, c) -> a, {W_JAVA}, StreamJoined.<String, String, String>as("{n}s").withName("{n}"))')
    elif op == "join_table" and t:
        p.stream(f"{s}.join({t}, lambda a, c: a)", f"{s}.join({t}, (a, c) -> a)")
    elif op == "left_join_table" and t:
        p.stream(f"{s}.left_join({t}, lambda k, a, c: a)", f"{s}.leftJoin({t}, (k, a, c) -> a)")
    elif op == "join_table_named" and t:
        n = p.fresh("jt")
        p.stream(f"{s}.join({t}, lambda a, c: a, Joined.as_('{n}'))", f'{s}.join({t}, (a, c) -> a, Joined.as("{n}"))')
    elif op == "to":
        n = p.fresh("out")
        p.statement(f"{s}.to('{n}')", f'{s}.to("{n}")')
    elif op == "to_named":
        n = p.fresh("out")
        p.statement(f"{s}.to('{n}', Produced.as_('{n}-sink'))", f'{s}.to("{n}", Produced.as("{n}-sink"))')
    elif op == "to_table":
        p.table(f"{s}.to_table()", f"{s}.toTable()")
    elif op == "to_table_store":
        n = p.fresh("tt")
        p.table(f"{s}.to_table(Named.as_('{n}'), Materialized.as_('{n}-store'))",
                f'{s}.toTable(Named.as("{n}"), Materialized.as("{n}-store"))')
    elif op == "split":
        n = p.fresh("split")
        var = f"branches{len(p.streams)}"
        p.python.append(f"{var} = {s}.split(Named.as_('{n}-')).branch(lambda k, v: True, Branched.as_('a'))"
                        f".branch(lambda k, v: False).default_branch()")
        p.java.append(f'Map<String, KStream<String, String>> {var} = {s}.split(Named.as("{n}-"))'
                      f'.branch((k, v) -> true, Branched.as("a")).branch((k, v) -> false).defaultBranch();')
        for key in ("a", "2", "0"):
            p.stream(f"{var}['{n}-{key}']", f'{var}.get("{n}-{key}")')
    elif op == "tumbling":
        p.stream(f"{s}.group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(timedelta(minutes=1))).count()"
                 f".to_stream(lambda k, v: 'x'){STR_PY}",
                 f'{s}.groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1))).count()'
                 f'.toStream((k, v) -> "x"){STR_JAVA}')
    elif op == "hopping_suppressed":
        p.stream(f"{s}.group_by_key().windowed_by(TimeWindows.of_size_and_grace(timedelta(minutes=5), timedelta(seconds=3))"
                 f".advance_by(timedelta(minutes=1))).count()"
                 f".suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream(lambda k, v: 'x'){STR_PY}",
                 f'{s}.groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(5), Duration.ofSeconds(3))'
                 f'.advanceBy(Duration.ofMinutes(1))).count()'
                 f'.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())).toStream((k, v) -> "x"){STR_JAVA}')
    elif op == "session":
        p.stream(f"{s}.group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(timedelta(minutes=1)))"
                 f".count(Materialized.with_(Serdes.String(), Serdes.Long())).to_stream(lambda k, v: 'x'){STR_PY}",
                 f'{s}.groupByKey().windowedBy(SessionWindows.ofInactivityGapWithNoGrace(Duration.ofMinutes(1)))'
                 f'.count(Materialized.with(Serdes.String(), Serdes.Long())).toStream((k, v) -> "x"){STR_JAVA}')
    elif op == "sliding":
        p.stream(f"{s}.group_by_key().windowed_by(SlidingWindows.of_time_difference_with_no_grace(timedelta(minutes=1)))"
                 f".reduce(lambda a, v: v).to_stream(lambda k, v: 'x')",
                 f'{s}.groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1)))'
                 f'.reduce((a, v) -> v).toStream((k, v) -> "x")')
    elif op == "table":
        n = p.fresh("table")
        p.table(f"b.table('{n}')", f'b.table("{n}")')
    elif op == "table_named":
        n = p.fresh("table")
        p.table(f"b.table('{n}', Consumed.as_('{n}-src'), Materialized.as_('{n}-store'))",
                f'b.table("{n}", Consumed.as("{n}-src"), Materialized.as("{n}-store"))')
    elif op == "table_filter" and t:
        p.table(f"{t}.filter(lambda k, v: True)", f"{t}.filter((k, v) -> true)")
    elif op == "table_map_values_store" and t:
        n = p.fresh("mv")
        p.table(f"{t}.map_values(lambda v: v, Materialized.as_('{n}'))", f'{t}.mapValues(v -> v, Materialized.as("{n}"))')
    elif op in ("table_join", "table_left_join", "table_outer_join") and t and t2 and t != t2:
        java = {"table_join": "join", "table_left_join": "leftJoin", "table_outer_join": "outerJoin"}[op]
        p.table(f"{t}.{op[len('table_'):]}({t2}, lambda x, y: x)", f"{t}.{java}({t2}, (x, y) -> x)")
    elif op == "table_join_store" and t and t2 and t != t2:
        n = p.fresh("tj")
        p.table(f"{t}.join({t2}, lambda x, y: x, Named.as_('{n}'), Materialized.as_('{n}-store'))",
                f'{t}.join({t2}, (x, y) -> x, Named.as("{n}"), Materialized.as("{n}-store"))')
    elif op == "table_group_by" and t:
        p.stream(f"{t}.group_by(lambda k, v: (v, v)).count().to_stream(){STR_PY}",
                 f"{t}.groupBy((k, v) -> KeyValue.pair(v, v)).count().toStream(){STR_JAVA}")
    elif op == "table_group_by_reduce" and t:
        n = p.fresh("tg")
        p.stream(f"{t}.group_by(lambda k, v: (v, v), Grouped.as_('{n}')).reduce(lambda a, v: v, lambda a, v: a, Named.as_('{n}r'), Materialized.with_(Serdes.String(), Serdes.String())).to_stream()",
                 f'{t}.groupBy((k, v) -> KeyValue.pair(v, v), Grouped.as("{n}")).reduce((a, v) -> v, (a, v) -> a, Named.as("{n}r"), Materialized.with(Serdes.String(), Serdes.String())).toStream()')
    elif op == "table_to_stream" and t:
        p.stream(f"{t}.to_stream()", f"{t}.toStream()")
    elif op == "suppress" and t:
        p.table(f"{t}.suppress(Suppressed.until_time_limit(timedelta(seconds=1), BufferConfig.unbounded()))",
                f"{t}.suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1), Suppressed.BufferConfig.unbounded()))")
    elif op == "stream_named":
        n = p.fresh("in")
        p.stream(f"b.stream('{n}', Consumed.as_('{n}-src'))", f'b.stream("{n}", Consumed.as("{n}-src"))')
    elif op == "foreach":
        p.statement(f"{s}.foreach(lambda k, v: None)", f"{s}.foreach((k, v) -> {{ }})")
    elif op == "print":
        n = p.fresh("p")
        p.statement(f"{s}.print(Printed.to_sys_out().with_label('{n}').with_name('{n}'))",
                    f'{s}.print(Printed.<String, String>toSysOut().withLabel("{n}").withName("{n}"))')
    elif op == "map_values_named":
        n = p.fresh("mv")
        p.stream(f"{s}.map_values(lambda v: v, Named.as_('{n}'))", f'{s}.mapValues(v -> v, Named.as("{n}"))')
    elif op == "table_to_stream_named" and t:
        n = p.fresh("ts")
        p.stream(f"{t}.to_stream(Named.as_('{n}'))", f'{t}.toStream(Named.as("{n}"))')
    elif op == "stream_two_topics":
        a, c = p.fresh("in"), p.fresh("in")
        p.stream(f"b.stream(['{a}', '{c}'])", f'b.stream(java.util.List.of("{a}", "{c}"))')


STEPS = [
    "filter", "filter_named", "map_values", "map_values_with_key", "select_key", "map", "flat_map", "flat_map_values",
    "peek", "count", "count_named", "count_materialized", "count_store", "reduce", "aggregate", "group_by",
    "group_by_grouped", "repartition", "repartition_named", "merge", "join", "left_join", "outer_join", "join_named",
    "join_table", "left_join_table", "join_table_named", "to", "to_named", "to_table", "to_table_store", "split",
    "tumbling", "hopping_suppressed", "session", "sliding", "table", "table_named", "table_filter",
    "table_map_values_store", "table_join", "table_left_join", "table_outer_join", "table_join_store",
    "table_group_by", "table_group_by_reduce", "table_to_stream", "suppress", "stream_two_topics",
    "stream_named", "foreach", "print", "map_values_named", "table_to_stream_named",
]


def random_program(seed: int, max_steps: int = 14) -> Program:
    r = random.Random(seed)
    p = Program(seed)
    first = p.fresh("in")
    p.stream(f"b.stream('{first}')", f'b.stream("{first}")')
    for _ in range(r.randint(1, max_steps)):
        _step(p, r)
    return p


JAVA_IMPORTS = """\
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.*;

"""
CHUNK = 200  # programs per class: a class's constant pool is limited


def java_sources(programs: list[Program]) -> dict[str, str]:
    """``{file name: source}``; ``RandomPrograms.main`` prints every program's description
    between ``=== <seed>`` and ``=== end`` lines."""
    sources = {}
    chunks = [programs[i:i + CHUNK] for i in range(0, len(programs), CHUNK)]
    for index, chunk in enumerate(chunks):
        prints = "".join(
            f'      System.out.print("=== {p.seed}\\n" + t{p.seed}() + "\\n=== end\\n");\n' for p in chunk)
        sources[f"RandomPrograms{index}.java"] = (
            JAVA_IMPORTS + f'@SuppressWarnings({{"unchecked", "rawtypes"}})\nclass RandomPrograms{index} {{\n'
            + "".join(p.java_method() for p in chunk)
            + f"    static void run() {{\n{prints}    }}\n}}\n")
    calls = "".join(f"      RandomPrograms{index}.run();\n" for index in range(len(chunks)))
    sources["RandomPrograms.java"] = (
        "public class RandomPrograms {\n    public static void main(String[] args) {\n" + calls + "    }\n}\n")
    return sources

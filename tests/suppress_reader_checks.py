"""What Kafka Streams' output of the suppress module must show for its suppressed table's readers and
its record-context outputs, so that comparing ours with it tests them (tests/test_equivalence_suppress.py)."""
from __future__ import annotations

import re

from suppress_context_topology import CONTEXT_OUTPUTS


def assert_the_other_readers_of_the_suppression_matter(expected: dict, family: str) -> None:
    """The table's updates looked up in its suppression: some read a value other than their own (a buffered
    key's prior value); the join through the kept filter never reads a value the filter drops; the
    suppressed left join's result re-grouped subtracts; the kept filter re-grouped subtracts what it added; the
    suppression of the suppression is read through both buffers."""
    looked_up = [value.split("|") for _, value in expected[("out-held-looked-up", family)]]
    assert len(looked_up) > 20 and any(mine != held for mine, held in looked_up)
    kept = [value.split("|")[0] for _, value in expected[("out-held-kept-joined", family)] if value is not None]
    assert len(kept) > 20 and not any(held.startswith("x") for held in kept)
    assert len(expected[("out-joined-held-joined", family)]) > 20
    assert any("-" in value for _, value in expected[("out-joined-held-regrouped", family)])
    # re-grouped through the kept filter: it subtracts only what it added (its store's old values, what the
    # filter last forwarded), never a value the filter dropped
    (*_, (_, history)) = expected[("out-held-kept-regrouped", family)]
    added: dict[str, int] = {}
    for sign, value in re.findall(r"([+-])([^+-]*)", history):
        added[value] = added.get(value, 0) + (1 if sign == "+" else -1)
        assert added[value] >= 0 and not value.startswith("x"), (sign, value)
    assert "-" in history
    # suppressed again: some of the table's updates read a value other than their own through both buffers
    looked_up = [value.split("/") for _, value in expected[("out-held-twice-looked-up", family)]]
    assert len(looked_up) > 20 and any(mine != held for mine, held in looked_up)
    assert len(expected[("out-held-twice-joined", family)]) > 20


def assert_updates_go_out_in_their_buffered_context(expected: dict, family: str) -> None:
    """The suppressed prices stamped with their record metadata: price i went to partition i % 2 at offset
    i // 2, and each update is stamped with the offset of its own record (the buffered one's), not that of
    the later record whose arrival evicted it; routed by that offset's parity (suppress_context_topology.py)."""
    for name, parity in zip(CONTEXT_OUTPUTS, (0, 1)):
        stamped = [value.split("|") for _, value in expected[(name, family)]]
        assert len(stamped) > 20
        offsets = [int(offset[1:]) for _, _, _, offset, _ in stamped]
        assert all(offset % 2 == parity for offset in offsets)
        assert all(int(value[1:]) // 2 == offset for (value, *_), offset in zip(stamped, offsets) if value != "null")

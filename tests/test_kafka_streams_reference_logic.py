"""equivalence_io.KafkaStreamsReference without a JVM: what our side needs is there at once, the rest
is computed once, from what the main printed, at its first read."""

from __future__ import annotations

from equivalence_io import KafkaStreamsReference


class _Main:
    """Stands in for oracle_harness.BackgroundMain: counts how often it was waited for."""

    def __init__(self, printed: str):
        self.printed, self.waited, self.closed = printed, 0, False

    def stdout(self) -> str:
        self.waited += 1
        return self.printed

    def close(self) -> None:
        self.closed = True


def test_ready_keys_do_not_wait_for_the_main():
    main = _Main('{"n": 3}')
    reference = KafkaStreamsReference(main, {"inputs": {"a": "topic-a"}}, lambda stdout: {"n": len(stdout)})
    assert reference["inputs"] == {"a": "topic-a"}
    assert main.waited == 0


def test_the_rest_is_finished_once_from_what_the_main_printed():
    main, finished = _Main("printed"), []

    def finish(stdout: str) -> dict:
        finished.append(stdout)
        return {"results": stdout.upper(), "inputs": "not this"}

    reference = KafkaStreamsReference(main, {"inputs": "ours"}, finish)
    assert reference["results"] == "PRINTED"
    assert dict(reference) == {"inputs": "ours", "results": "PRINTED"}  # what is ready stays as given
    assert len(reference) == 2 and finished == ["printed"] and main.waited == 1
    reference.close()
    assert main.closed

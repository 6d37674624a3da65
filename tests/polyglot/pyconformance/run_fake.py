"""Runs a scenario of the pyconformance engine through the Python kit's test kit, as
`tests/components/conformance/src/fake_runner.rs` does for the Rust one: the operator's settings
and the steps read from the file `TESSERA_CONFORMANCE_SCENARIO`, the transcript (one
`{"status", "body"}` per step, then `{"published": [n, …]}`) written to
`TESSERA_CONFORMANCE_TRANSCRIPT`. Run by `tests/it/polyglot.rs` with the kit on the path."""

import json
import os

from conformance_engine import ConformanceEngine
from tessera_engine import Context
from tessera_engine.testkit import TestHost


def main() -> None:
    with open(os.environ["TESSERA_CONFORMANCE_SCENARIO"], encoding="utf-8") as handle:
        scenario = json.load(handle)
    test_host = TestHost(ConformanceEngine())
    for name, value in scenario.get("settings", {}).items():
        test_host.set_setting(name, value)
    transcript = []
    for step in scenario["steps"]:
        ctx = Context(step["tenant_id"], step["user_id"], step.get("role", "editor"))
        answer = test_host.post_json(ctx, "/api/v1/script", step["script"])
        transcript.append({"status": answer.status, "body": answer.json()})
    transcript.append({"published": [event.payload.get("n") for event in test_host.published()]})
    with open(os.environ["TESSERA_CONFORMANCE_TRANSCRIPT"], "w", encoding="utf-8") as handle:
        json.dump(transcript, handle)


if __name__ == "__main__":
    main()

"""The conformance vectors (conformance/vectors): current with the contract, and kept by the Python publisher.

Each case runs through the publisher's public API (``Publisher.publish`` / ``publish_batch``) with a
real botocore SQS client, whose parameter validation runs, answered in place of SQS: what the
publisher sends (bodies, ``DelaySeconds``, ``MessageGroupId``, ``AWSTraceHeader``, the calls' entries)
and what it refuses are compared with the case. The envelope cases are a consumer's: the contract's
``parse``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from conformance import codes
from conformance.__main__ import render, write
from conformance.case import JOB_TYPE, PUBLISHED_AT, padded, sized_job_body
from conformance.categories.payload_schemas import SCHEMAS, schema_type
from tiered_jobs.contract import envelope
from tiered_jobs.contract.names import Env
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.sqs_limits import message_size
from tiered_jobs.contract.times import parse_iso
from tiered_jobs.publisher import InvalidJobError, Job, Publisher
from tiered_jobs.stage.discovery import DiscoveryError

VECTORS = Path(__file__).resolve().parents[2] / "conformance" / "vectors"
QUEUE_URL = "https://sqs.us-east-1.amazonaws.com/123456789012/{tier}"


def _cases() -> list[Any]:
    found = []
    for path in sorted(VECTORS.glob("*.json")):
        content = json.loads(path.read_text(encoding="utf-8"))
        for case in content["cases"]:
            found.append(pytest.param(content["category"], case, id=f"{content['category']}/{case['name']}"))
    return found


CASES = _cases()


def test_the_vectors_are_those_the_contract_writes_now(tmp_path):
    """Stale vectors fail here: regenerate with ``python -m conformance write conformance/vectors``."""
    written = {path.name: path.read_text(encoding="utf-8") for path in write(tmp_path)}
    checked_in = {path.name: path.read_text(encoding="utf-8") for path in VECTORS.glob("*.json")}
    assert sorted(checked_in) == sorted(written)
    stale = [name for name in written if checked_in[name] != written[name]]
    assert stale == [], f"stale vectors {stale}: run python -m conformance write conformance/vectors"


def test_every_category_has_cases_a_reader_can_read():
    by_category: dict[str, int] = {}
    for param in CASES:
        category, case = param.values
        assert set(case) == {"name", "description", "input", "expect"}
        assert case["description"] and "\n" not in case["description"]
        by_category[category] = by_category.get(category, 0) + 1
    assert sorted(by_category) == sorted(
        [
            "batch_chunking",
            "delay_and_deadline",
            "envelopes",
            "keys_and_tenants",
            "message_size",
            "payload_schemas",
            "routing",
            "sqs_characters",
            "trace_header",
        ]
    )
    assert all(5 <= count <= 60 for count in by_category.values()), by_category


def test_a_rule_the_codes_do_not_know_stops_the_generator():
    with pytest.raises(ValueError, match="add its rule to conformance/codes.py"):
        codes.job_problem("'type' broke a rule nobody wrote down yet")
    with pytest.raises(ValueError, match="add its rule to conformance/codes.py"):
        codes.payload_problem("payload field 'a' is of a kind nobody wrote down yet")


def test_a_vector_file_is_ascii_with_escapes_any_json_reader_decodes():
    assert render({"text": "a\ud800\u0000é"}) == '{\n  "text": "a\\ud800\\u0000\\u00e9"\n}\n'


# -- the Python publisher against every case ---------------------------------------------------------


class AnsweredSqs:
    """A real SQS client whose ``SendMessageBatch`` calls are answered here (every entry sent) and recorded."""

    def __init__(self) -> None:
        self.client = boto3.client(
            "sqs", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        self.calls: list[dict[str, Any]] = []
        events = self.client.meta.events
        events.register("before-parameter-build.sqs.SendMessageBatch", self._remember)
        events.register("before-call.sqs.SendMessageBatch", self._answer)

    def _remember(self, params: dict[str, Any], **_: Any) -> None:
        self.calls.append(json.loads(json.dumps(params)))

    def _answer(self, **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        # botocore has validated the parameters against SQS's model by now; before-call may answer in
        # place of the service.
        sent = [
            {"Id": entry["Id"], "MessageId": f"m-{entry['Id']}", "MD5OfMessageBody": ""}
            for entry in self.calls[-1]["Entries"]
        ]
        return AWSResponse("https://sqs.invalid/", 200, {}, None), {"Successful": sent, "Failed": []}

    def entries(self) -> list[dict[str, Any]]:
        return [entry for call in self.calls for entry in call["Entries"]]


@pytest.fixture(scope="module")
def answered() -> AnsweredSqs:
    return AnsweredSqs()


@pytest.fixture
def sqs(answered) -> Iterator[AnsweredSqs]:
    answered.calls.clear()
    yield answered


def publisher_for(sqs: AnsweredSqs, routes: dict[str, str] | None = None, **options: Any) -> Publisher:
    table = routes or {"conformance.*": "critical"}
    tiers = set(table.values()) | {"critical", "bulk"}
    return Publisher(
        {tier: QUEUE_URL.format(tier=tier) for tier in sorted(tiers)},
        Routes(table),
        sqs=sqs.client,
        trace_context=None,
        sleep=lambda _: None,
        **options,
    )


def refused(run: Callable[[], Any], job_type: str, key: str) -> list[str]:
    """The problems ``run`` is refused with, each without the job's name the publisher puts first."""
    with pytest.raises(InvalidJobError) as raised:
        run()
    prefix = f"job {job_type} (key {key!r}): "
    assert all(problem.startswith(prefix) for problem in raised.value.problems), raised.value.problems
    return [problem[len(prefix) :] for problem in raised.value.problems]


def sent_body(sqs: AnsweredSqs) -> dict[str, Any]:
    (entry,) = sqs.entries()
    body: dict[str, Any] = json.loads(entry["MessageBody"])
    return body


def run_envelope(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any]) -> None:
    try:
        parsed = envelope.parse(given["body"])
    except envelope.EnvelopeTooNew as exc:
        assert expect == {"error": "envelope_too_new", "problems": codes.job_problems(exc.problems)}
        return
    except envelope.EnvelopeError as exc:
        found = codes.job_problems(exc.problems)
        if expect["error"] in ("not_json", "body_too_large"):
            assert [problem["code"] for problem in found] == [expect["error"]]
        else:
            assert expect == {"error": "envelope_invalid", "problems": found}
        return
    assert expect == {"valid": True, "envelope": parsed.to_dict()}
    # What a consumer accepts, the Python publisher sends: the same fields, stamped with its own time.
    fields = parsed.to_dict()
    publisher_for(sqs, {fields["type"]: "critical"}).publish(
        fields["type"], fields["payload"], fields["idempotency_key"], tenant=fields.get("tenant")
    )
    body = sent_body(sqs)
    assert {k: body[k] for k in ("type", "idempotency_key", "payload", "version")} == {
        k: fields[k] for k in ("type", "idempotency_key", "payload", "version")
    }


def run_payload_schema(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any], folder: Path) -> None:
    job_type = schema_type(given["schema"])
    publish = lambda: publisher_for(sqs).publish(job_type, given["payload"], "k")  # noqa: E731
    if expect.get("valid"):
        publish()
        assert sent_body(sqs)["payload"] == given["payload"]
    else:
        assert codes.payload_problems(refused(publish, job_type, "k")) == expect["problems"]


def run_routing(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any]) -> None:
    publisher = publisher_for(sqs, given["routes"])
    publish = lambda: publisher.publish(given["job_type"], {}, "k")  # noqa: E731
    if "tier" in expect:
        result = publish()
        assert (result.tier, sqs.calls[0]["QueueUrl"]) == (expect["tier"], QUEUE_URL.format(tier=expect["tier"]))
    else:
        assert codes.job_problems(refused(publish, given["job_type"], "k")) == expect["problems"]


def run_key_and_tenant(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any]) -> None:
    key = given["idempotency_key"]
    publish = lambda: publisher_for(sqs).publish(  # noqa: E731
        JOB_TYPE, {}, key, tenant=given.get("tenant"), tags=given.get("tags")
    )
    if expect.get("valid"):
        publish()
        (entry,) = sqs.entries()
        assert entry.get("MessageGroupId") == expect["message_group_id"]
        body = json.loads(entry["MessageBody"])
        assert body["idempotency_key"] == key
        assert body.get("tags") == expect.get("tags")
    else:
        shown = f"{key[:40]}…({len(key)} characters)" if len(key) > 60 else key
        problems = refused(publish, JOB_TYPE, shown)
        assert codes.job_problems(problems) == expect["problems"]


def run_sqs_characters(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any]) -> None:
    text = given["text"]
    assert [ord(character) for character in text] == given["code_points"]
    publish = lambda: publisher_for(sqs).publish(JOB_TYPE, {"text": text}, "k")  # noqa: E731
    first = expect["first_refused"]
    if first is None:
        publish()
        assert sent_body(sqs)["payload"]["text"] == text
    else:
        (problem,) = refused(publish, JOB_TYPE, "k")
        assert codes.job_problem(problem) == {"code": "refused_character"}
        assert f"holds {first['code_point']} at character {first['index']}," in problem


def run_message_size(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any]) -> None:
    if "attributes" in given:  # the publisher sets none: the contract's count, for ports that do
        attributes = {
            name: {**value, "BinaryValue": base64.b64decode(value["BinaryValue"])} if "BinaryValue" in value else value
            for name, value in given["attributes"].items()
        }
        assert message_size(given["body"], attributes) == expect["bytes"]
        return
    payload = padded(given["payload"], given.get("pad"))
    key = given["idempotency_key"]
    publish = lambda: publisher_for(sqs).publish(given["type"], payload, key, tenant=given.get("tenant"))  # noqa: E731
    if expect.get("valid"):
        publish()
        (entry,) = sqs.entries()
        body = json.loads(entry["MessageBody"])
        # Its own published_at, of the one form and length every publisher stamps.
        assert len(body["published_at"]) == len(PUBLISHED_AT)
        assert len(entry["MessageBody"].encode("utf-8")) == expect["bytes"]
    else:
        assert codes.job_problems(refused(publish, given["type"], key)) == expect["problems"]


def run_batch_chunking(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any]) -> None:
    jobs = []
    for index, entry in enumerate(given["entries"]):
        payload, pad = sized_job_body(f"k{index}", entry["bytes"])
        jobs.append(Job("conformance.sized", padded(payload, pad), f"k{index}", tier=entry["tier"]))
    publisher_for(sqs).publish_batch(jobs)
    tier_of = {QUEUE_URL.format(tier=tier): tier for tier in ("critical", "bulk")}
    calls = [
        {
            "tier": tier_of[call["QueueUrl"]],
            "entries": [int(json.loads(e["MessageBody"])["idempotency_key"][1:]) for e in call["Entries"]],
        }
        for call in sqs.calls
    ]
    assert calls == expect["calls"]
    sizes = [sum(len(e["MessageBody"].encode("utf-8")) for e in call["Entries"]) for call in sqs.calls]
    assert all(size <= expect["limits"]["bytes"] for size in sizes)


def run_delay_and_deadline(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any]) -> None:
    now = parse_iso(given["now"])
    options = {"delay": given.get("delay"), "expires_in": given.get("expires_in")}
    if "expires_at" in given:
        options["expires_at"] = parse_iso(given["expires_at"])
    publisher = publisher_for(sqs, clock=lambda: now)
    publish = lambda: publisher.publish(JOB_TYPE, {}, "k", **options)  # noqa: E731
    if "problems" in expect:
        assert codes.job_problems(refused(publish, JOB_TYPE, "k")) == expect["problems"]
    elif expect.get("scheduled"):
        # Past SQS's delay the job takes the schedule's path, which this publisher was given none of.
        with pytest.raises(DiscoveryError, match="no scheduling configured"):
            publish()
        assert sqs.calls == []
    else:
        publish()
        (entry,) = sqs.entries()
        assert entry.get("DelaySeconds", 0) == expect["delay_seconds"]
        assert json.loads(entry["MessageBody"]).get("expires_at") == expect["expires_at"]


def run_trace_header(sqs: AnsweredSqs, given: dict[str, Any], expect: dict[str, Any]) -> None:
    publish = lambda: publisher_for(sqs).publish(JOB_TYPE, {}, "k", trace_header=given["trace_header"])  # noqa: E731
    if "problems" in expect:
        assert codes.job_problems(refused(publish, JOB_TYPE, "k")) == expect["problems"]
        return
    publish()
    (entry,) = sqs.entries()
    header = entry.get("MessageSystemAttributes", {}).get("AWSTraceHeader")
    assert (header and header["StringValue"]) == expect["AWSTraceHeader"]
    assert "MessageAttributes" not in entry  # a system attribute: none of the 10, not counted in the size


RUNNERS: dict[str, Callable[..., None]] = {
    "envelopes": run_envelope,
    "routing": run_routing,
    "keys_and_tenants": run_key_and_tenant,
    "sqs_characters": run_sqs_characters,
    "message_size": run_message_size,
    "batch_chunking": run_batch_chunking,
    "delay_and_deadline": run_delay_and_deadline,
    "trace_header": run_trace_header,
}


@pytest.fixture
def schemas(tmp_path, monkeypatch) -> Path:
    """The payload cases' schemas, in the one folder the publisher searches (no app's schema applies)."""
    for name, schema in SCHEMAS.items():
        (tmp_path / f"{schema_type(name)}.schema.json").write_text(json.dumps(schema), encoding="utf-8")
    monkeypatch.setenv(Env.SCHEMA_DIRS, str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(("category", "case"), CASES)
def test_the_python_publisher_keeps_every_case(category, case, sqs, schemas):
    if category == "payload_schemas":
        run_payload_schema(sqs, case["input"], case["expect"], schemas)
    else:
        RUNNERS[category](sqs, case["input"], case["expect"])


def test_the_publishing_docs_count_each_file_as_it_is():
    """docs/publishing.md ("Any other language") lists every vector file with its number of cases."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "publishing.md").read_text(encoding="utf-8")
    listed = {name: int(count) for name, count in re.findall(r"^\| `(\w+)\.json` \| (\d+) \|", page, re.M)}
    counts: dict[str, int] = {}
    for param in CASES:
        counts[param.values[0]] = counts.get(param.values[0], 0) + 1
    assert listed == counts

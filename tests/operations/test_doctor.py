"""``tiered-jobs doctor`` on stubbed AWS: botocore's Stubber answers every call and checks each request's
parameters against the service's model, so the calls are the ones AWS would accept; the denied and
unknown quotas are the paths an operator without Service Quotas rights (and the local mode) takes."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from tiered_jobs import cli as cli_module
from tiered_jobs.contract.names import Ssm
from tiered_jobs.contract.routing import Routes
from tiered_jobs.contract.tiers import TierQueues
from tiered_jobs.operations import doctor
from tiered_jobs.stage.discovery import Deployment

STAGE = "prod"
REGION = "eu-west-1"
TIERS = {"critical": 20, "standard": 10, "bulk": 5}
SCHEDULES = {"QuotaName": "Number of schedules", "QuotaCode": "L-SCHEDULES", "Value": 10_000_000.0}
IN_FLIGHT = {"QuotaName": "Messages per queue (in flight)", "QuotaCode": "L-INFLIGHT", "Value": 120_000.0}


def _uuid(i: int) -> str:
    """A mapping's UUID as Lambda spells it (the model checks its length)."""
    return f"{i:08d}-0000-4000-8000-000000000000"


class Aws:
    """One stubbed client per service, and the answers queued on each in the order doctor asks."""

    def __init__(self) -> None:
        session = boto3.session.Session(region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
        self.clients = {name: session.client(name) for name in ("ssm", "lambda", "service-quotas", "sqs", "kms")}
        self.stubs = {name: Stubber(client) for name, client in self.clients.items()}

    def client(self, service: str, **_config: object) -> object:
        return self.clients[service]

    def stage(
        self, tiers: dict[str, int], reserved: dict[str, int] | None = None, batch_size: int = 10, alias: str = ""
    ) -> None:
        """``alias``: each mapping invokes that alias of its consumer (a canary tier's ``live``)."""
        names = [Ssm.tier(STAGE, tier, Ssm.TIER_MAPPING_UUID) for tier in tiers]
        self.stubs["ssm"].add_response(
            "get_parameters",
            {"Parameters": [{"Name": name, "Value": _uuid(i)} for i, name in enumerate(names)]},
            {"Names": names},
        )
        for i, (tier, maximum) in enumerate(tiers.items()):
            arn = f"arn:aws:lambda:{REGION}:123456789012:function:tiered-jobs-{STAGE}-{tier}-consumer"
            self.stubs["lambda"].add_response(
                "get_event_source_mapping",
                {
                    "UUID": _uuid(i),
                    "FunctionArn": f"{arn}:{alias}" if alias else arn,
                    "BatchSize": batch_size,
                    "ScalingConfig": {"MaximumConcurrency": maximum},
                },
                {"UUID": _uuid(i)},
            )
            answer = {"ReservedConcurrentExecutions": reserved[tier]} if reserved and tier in reserved else {}
            self.stubs["lambda"].add_response("get_function_concurrency", answer, {"FunctionName": arn})

    def account(self, total: int, unreserved: int) -> None:
        self.stubs["lambda"].add_response(
            "get_account_settings",
            {"AccountLimit": {"ConcurrentExecutions": total, "UnreservedConcurrentExecutions": unreserved}},
            {},
        )

    def quotas(self, *, denied: bool = False, lambda_quota: float = 1000.0) -> None:
        stub = self.stubs["service-quotas"]
        lambda_params = {"ServiceCode": "lambda", "QuotaCode": doctor.LAMBDA_CONCURRENCY_QUOTA[1]}
        if denied:
            stub.add_client_error(
                "get_service_quota", "AccessDeniedException", "not authorized", 400, expected_params=lambda_params
            )
            for service in ("scheduler", "sqs"):
                stub.add_client_error(
                    "list_service_quotas",
                    "AccessDeniedException",
                    "not authorized",
                    400,
                    expected_params={"ServiceCode": service},
                )
            return
        stub.add_response(
            "get_service_quota", {"Quota": {"QuotaName": "Concurrent executions", "Value": lambda_quota}}, lambda_params
        )
        stub.add_response("list_service_quotas", {"Quotas": [SCHEDULES]}, {"ServiceCode": "scheduler"})
        stub.add_response("list_service_quotas", {"Quotas": [IN_FLIGHT]}, {"ServiceCode": "sqs"})

    def diagnose(self) -> doctor.Report:
        return doctor.diagnose(STAGE, list(TIERS), self.client)


@pytest.fixture
def aws() -> Iterator[Aws]:
    stubbed = Aws()
    for stub in stubbed.stubs.values():
        stub.activate()
    yield stubbed
    for stub in stubbed.stubs.values():
        stub.assert_no_pending_responses()
        stub.deactivate()


def _by_name(report: doctor.Report) -> dict[str, list[doctor.Check]]:
    found: dict[str, list[doctor.Check]] = {}
    for check in report.checks:
        found.setdefault(check.name, []).append(check)
    return found


def test_a_new_accounts_quota_of_ten_fails_the_default_tiers_and_names_the_fix(aws):
    aws.stage(TIERS)
    aws.account(total=10, unreserved=10)
    aws.quotas(lambda_quota=10.0)
    report = aws.diagnose()
    checks = _by_name(report)
    (quota,) = checks["Lambda account quota"]
    assert quota.status == doctor.WARN and "10, below the regional default of 1000" in quota.detail
    assert "request-service-quota-increase" in quota.fix and "L-B99A9384" in quota.fix
    (tiers,) = checks["Tiers' concurrency"]
    assert tiers.status == doctor.FAIL
    assert "35 consumers (critical 20, standard 10, bulk 5), 10 are unreserved" in tiers.detail
    assert "sum to 10 at most" in tiers.fix
    assert report.failed


def test_tiers_that_fit_a_grown_account_pass(aws):
    aws.stage(TIERS)
    aws.account(total=1000, unreserved=1000)
    aws.quotas()
    report = aws.diagnose()
    assert not report.failed
    assert {check.status for check in report.checks} == {doctor.OK}
    assert "Number of schedules: 10000000" in _by_name(report)["Scheduler schedules"][0].detail


def test_a_reservation_below_the_mappings_maximum_fails_and_reservations_leave_the_shared_pool(aws):
    aws.stage(TIERS, reserved={"critical": 10, "bulk": 5})
    aws.account(total=1000, unreserved=985)
    aws.quotas()
    checks = _by_name(aws.diagnose())
    (critical,) = checks["Tier critical reserved"]
    assert (
        critical.status == doctor.FAIL
        and "reserved concurrency 10 is below the mapping's maximum 20" in critical.detail
    )
    assert checks["Tier bulk reserved"][0].status == doctor.OK
    # only standard shares the account's pool: its 10, not the 35 of every tier
    assert "may run 10 consumers (standard 10)" in checks["Tiers' concurrency"][0].detail


def test_reservations_beyond_what_lambda_keeps_unreserved_fail(aws):
    aws.stage(TIERS, reserved={"critical": 20, "standard": 10, "bulk": 5})
    aws.account(total=120, unreserved=100)
    aws.quotas()
    (check,) = _by_name(aws.diagnose())["Reservations"]
    assert check.status == doctor.FAIL and "reserve 35 of 120; Lambda keeps 100 unreserved" in check.detail


def test_a_tier_holding_more_in_flight_than_sqs_allows_fails(aws):
    aws.stage({"critical": 1000, "standard": 10, "bulk": 5}, batch_size=200)
    aws.account(total=5000, unreserved=5000)
    aws.quotas()
    (check,) = _by_name(aws.diagnose())["SQS messages in flight"]
    assert check.status == doctor.FAIL and "critical may hold 200000 in flight" in check.detail


def test_denied_quotas_are_not_readable_and_never_a_failure(aws):
    aws.stage(TIERS)
    aws.account(total=1000, unreserved=1000)
    aws.quotas(denied=True)
    report = aws.diagnose()
    checks = _by_name(report)
    for name in ("Lambda quota (Service Quotas)", "Scheduler schedules", "SQS messages in flight"):
        (check,) = checks[name]
        assert check.status == doctor.UNREADABLE and "AccessDeniedException" in check.detail, name
        assert "servicequotas:" in check.fix
    assert not report.failed


def test_denied_account_settings_and_an_unknown_quota_are_not_readable(aws):
    aws.stage(TIERS)
    aws.stubs["lambda"].add_client_error("get_account_settings", "AccessDeniedException", "no", 400, expected_params={})
    stub = aws.stubs["service-quotas"]
    stub.add_client_error(  # what moto (the local mode) answers for any quota but a VPC's
        "get_service_quota",
        "NoSuchResourceException",
        "",
        400,
        expected_params={"ServiceCode": "lambda", "QuotaCode": "L-B99A9384"},
    )
    stub.add_response("list_service_quotas", {"Quotas": []}, {"ServiceCode": "scheduler"})
    stub.add_client_error(  # what moto's server answers for a call it does not implement
        "list_service_quotas", "500", "<!doctype html><title>500</title>", 500, expected_params={"ServiceCode": "sqs"}
    )
    checks = _by_name(aws.diagnose())
    assert checks["Lambda concurrency"][0].status == doctor.UNREADABLE
    # the tiers' own figure is still said, beside why the account's is missing
    assert "may run 35 consumers (critical 20, standard 10, bulk 5)" in checks["Lambda concurrency"][0].detail
    assert "AccessDeniedException" in checks["Lambda concurrency"][0].detail
    assert checks["SQS messages in flight"][0].detail == "not served by this endpoint (HTTP 500, ListServiceQuotas)"
    # a grant fixes a denial only: a quota the endpoint or region lacks needs nothing
    assert checks["SQS messages in flight"][0].fix.startswith("none needed")
    assert checks["Lambda quota (Service Quotas)"][0].fix.startswith("none needed")
    assert "lambda:GetAccountSettings" in checks["Lambda concurrency"][0].fix
    assert checks["Lambda quota (Service Quotas)"][0].status == doctor.UNREADABLE
    assert checks["Scheduler schedules"][0].detail == "no scheduler quota named like 'number of schedules'"


def test_a_denied_mapping_is_its_tiers_check_and_the_others_still_count(aws):
    names = [Ssm.tier(STAGE, tier, Ssm.TIER_MAPPING_UUID) for tier in TIERS]
    aws.stubs["ssm"].add_response(
        "get_parameters", {"Parameters": [{"Name": names[0], "Value": _uuid(0)}]}, {"Names": names}
    )
    aws.stubs["lambda"].add_client_error(
        "get_event_source_mapping", "AccessDeniedException", "no", 403, expected_params={"UUID": _uuid(0)}
    )
    aws.account(total=1000, unreserved=1000)
    aws.quotas()
    checks = _by_name(aws.diagnose())
    assert checks["Tier critical"][0].status == doctor.UNREADABLE
    assert "mapping-uuid not found" in checks["Tier standard"][0].detail


# -- the command -------------------------------------------------------------------------------


@pytest.fixture
def cli(aws, monkeypatch) -> Aws:
    deployment = Deployment(
        tiers={tier: TierQueues(f"https://sqs/{tier}", None) for tier in TIERS}, routes=Routes({}), source="test"
    )
    monkeypatch.setattr(cli_module.Target, "client", lambda self, service, **config: aws.client(service))
    monkeypatch.setattr(cli_module.Target, "deployment", lambda self: deployment)
    return aws


def _queue_key(aws: Aws, key: str | None) -> None:
    """The first tier's queue answers its key (``None``: SSE-SQS), as the command asks after the limits."""
    attributes = {"KmsMasterKeyId": key} if key else {"SqsManagedSseEnabled": "true"}
    aws.stubs["sqs"].add_response(
        "get_queue_attributes",
        {"Attributes": attributes},
        {"QueueUrl": f"https://sqs/{next(iter(TIERS))}", "AttributeNames": ["KmsMasterKeyId"]},
    )


def _run(*args: str):
    return CliRunner().invoke(cli_module.app, ["--stage", STAGE, "--region", REGION, "doctor", *args])


def test_the_command_exits_1_on_a_failed_check_and_prints_every_check_as_json(cli):
    cli.stage(TIERS)
    cli.account(total=10, unreserved=10)
    cli.quotas(denied=True)
    _queue_key(cli, None)
    result = _run("--json")
    assert result.exit_code == 1, result.output
    shown = json.loads(result.stdout)
    assert shown["failed"] is True and shown["stage"] == STAGE
    statuses = {check["name"]: check["status"] for check in shown["checks"]}
    assert statuses["Tiers' concurrency"] == "fail" and statuses["Scheduler schedules"] == "not readable"


def test_the_command_prints_a_table_and_exits_0_when_nothing_fails(cli):
    cli.stage(TIERS)
    cli.account(total=1000, unreserved=1000)
    cli.quotas(denied=True)
    _queue_key(cli, None)
    result = _run()
    assert result.exit_code == 0, result.output
    for text in ("Check", "Status", "Fix", "Tiers' concurrency", "not readable"):
        assert text in result.stdout


def test_the_command_checks_the_stage_key_found_on_a_tier_queue(cli):
    key = f"arn:aws:kms:{REGION}:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    cli.stage(TIERS)
    cli.account(total=1000, unreserved=1000)
    cli.quotas(denied=True)
    _queue_key(cli, key)
    metadata = {"KeyId": key.rsplit("/", 1)[1], "Arn": key, "Enabled": False, "KeyState": "PendingDeletion"}
    cli.stubs["kms"].add_response("describe_key", {"KeyMetadata": metadata}, {"KeyId": key})
    cli.stubs["kms"].add_response(
        "get_key_policy", {"Policy": json.dumps({"Statement": []})}, {"KeyId": key, "PolicyName": "default"}
    )
    result = _run("--json")
    assert result.exit_code == 1, result.output
    (check,) = [c for c in json.loads(result.stdout)["checks"] if c["name"] == "Stage key"]
    assert check["status"] == "fail" and "PendingDeletion" in check["detail"]


def test_account_settings_the_endpoint_does_not_serve_need_no_grant(aws):
    """The local mode's moto answers GetAccountSettings with an HTML 404: no right would help."""
    aws.stage(TIERS)
    aws.stubs["lambda"].add_client_error("get_account_settings", "404", "<!doctype html>", 404, expected_params={})
    aws.quotas()
    (check,) = _by_name(aws.diagnose())["Lambda concurrency"]
    assert check.status == doctor.UNREADABLE
    assert check.detail.endswith("not served by this endpoint (HTTP 404, GetAccountSettings)")
    assert check.fix.startswith("none needed")


def test_a_canary_tiers_reservation_is_read_on_its_function_not_the_alias_its_mapping_invokes(aws):
    # Lambda reads a reservation by the unqualified function only; the stub checks the name asked for.
    aws.stage(TIERS, reserved={"critical": 25}, alias="live")
    aws.account(total=1000, unreserved=975)
    aws.quotas()
    report = aws.diagnose()
    assert not report.failed
    (critical,) = [c for c in report.checks if c.name == "Tier critical reserved"]
    assert critical.status == doctor.OK and "reserved concurrency 25" in critical.detail
    assert doctor.UNREADABLE not in {c.status for c in report.checks}


def test_only_a_qualified_function_arn_loses_its_qualifier():
    arn = f"arn:aws:lambda:{REGION}:123456789012:function:tiered-jobs-prod-critical-consumer"
    assert doctor.unqualified(f"{arn}:live") == arn
    assert doctor.unqualified(arn) == arn
    assert doctor.unqualified("tiered-jobs-prod-critical-consumer") == "tiered-jobs-prod-critical-consumer"

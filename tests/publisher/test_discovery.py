"""Finding the queues: SSM parameters and stack outputs written by a (miniature) stack, the environment."""

from __future__ import annotations

import json
from types import SimpleNamespace

import boto3
import pytest

from tests.support.stack import deploy, received_bodies
from tiered_jobs import publisher as publisher_module
from tiered_jobs.contract.names import Env, PublisherParameters, Schedules, Ssm
from tiered_jobs.publisher import Publisher
from tiered_jobs.stage import cancelling, discovery, scheduling
from tiered_jobs.stage.discovery import DiscoveryError


def test_from_ssm_reads_every_tier_the_routes_and_the_replay_function(deployment):
    found = discovery.from_ssm(deployment.stage)

    assert found.queue_urls() == deployment.queue_urls
    assert {name: urls.dlq_url for name, urls in found.tiers.items()} == deployment.dlq_urls
    assert found.routes.table == deployment.routes
    assert found.replay_function_name == deployment.replay_function_name
    assert (found.source, found.stage) == ("SSM /tiered-jobs/test", "test")


def test_from_stack_outputs_reads_the_same(deployment):
    found = discovery.from_stack_outputs(deployment.stack_name)

    assert found.queue_urls() == deployment.queue_urls
    assert {name: urls.dlq_url for name, urls in found.tiers.items()} == deployment.dlq_urls
    assert found.routes.table == deployment.routes
    assert found.replay_function_name == deployment.replay_function_name
    assert found.source == "stack TieredJobs-test"


def test_tier_names_not_in_the_routes_are_rebuilt_from_camel_case_outputs(aws):
    made = deploy(tiers=("critical", "bulk-eu"), routes={"payments.*": "critical"})

    found = discovery.from_stack_outputs(made.stack_name)

    assert found.queue_urls() == made.queue_urls  # "BulkEuQueueUrl" -> "bulk-eu"


def test_a_stage_that_is_not_deployed_says_where_it_looked(aws):
    with pytest.raises(
        DiscoveryError,
        match=r"SSM parameter /tiered-jobs/prod/tiers not found: is stage 'prod' "
        r"deployed in this account and region \(us-east-1\)\?",
    ):
        discovery.from_ssm("prod")


def test_a_missing_tier_parameter_is_named(deployment):
    boto3.client("ssm").delete_parameter(Name=Ssm.tier("test", "bulk", Ssm.TIER_QUEUE_URL))

    with pytest.raises(DiscoveryError, match=r"SSM parameter /tiered-jobs/test/tiers/bulk/queue-url not found"):
        discovery.from_ssm("test")


def test_malformed_routes_are_a_discovery_error(deployment):
    boto3.client("ssm").put_parameter(Name=Ssm.routes("test"), Value="[1, 2]", Type="String", Overwrite=True)

    with pytest.raises(DiscoveryError, match=r"routes in /tiered-jobs/test/routes are not a JSON object"):
        discovery.from_ssm("test")


def test_a_missing_stack_says_so(aws):
    with pytest.raises(DiscoveryError, match=r"stack 'TieredJobs-nope' not found in us-east-1"):
        discovery.from_stack_outputs("TieredJobs-nope")


def test_from_env_reads_per_tier_urls_and_routes():
    environ = {
        Env.tier_var(Env.QUEUE_URL, "critical"): "https://q/critical",
        Env.tier_var(Env.DLQ_URL, "critical"): "https://q/critical-dlq",
        Env.tier_var(Env.QUEUE_URL, "bulk-eu"): "https://q/bulk-eu",
        Env.ROUTES: json.dumps({"payments.*": "critical"}),
        "TIERED_JOBS_QUEUE_URL": "https://q/consumer-own-queue",  # the consumer's variable: not a tier
    }

    found = discovery.from_env(environ)

    assert found.queue_urls() == {"critical": "https://q/critical", "bulk-eu": "https://q/bulk-eu"}
    assert found.tier("critical").dlq_url == "https://q/critical-dlq"
    assert found.routes.tier_for("payments.capture") == "critical"


def test_from_env_without_urls_explains_the_variables():
    with pytest.raises(DiscoveryError, match=r"set TIERED_JOBS_QUEUE_URL_<TIER> for each tier"):
        discovery.from_env({})


def test_from_env_without_routes_needs_an_explicit_tier():
    found = discovery.from_env({Env.tier_var(Env.QUEUE_URL, "bulk"): "https://q/bulk"})
    assert found.routes.table == {}


def test_unknown_tier_lists_the_known_ones(deployment):
    with pytest.raises(LookupError, match=r"unknown tier 'urgent'; known tiers: bulk, critical, transactional"):
        discovery.from_ssm("test").tier("urgent")


def test_publisher_constructors_publish_to_the_discovered_queues(deployment, sqs):
    for made in (
        Publisher.from_stage("test", sqs=sqs),
        Publisher.from_stack_outputs(deployment.stack_name, sqs=sqs),
        Publisher.from_env(
            {
                **{Env.tier_var(Env.QUEUE_URL, t): u for t, u in deployment.queue_urls.items()},
                Env.ROUTES: json.dumps(deployment.routes),
            },
            sqs=sqs,
        ),
    ):
        assert made.publish("notifications.email", {}, "e1").queue_url == deployment.queue_urls["transactional"]
    assert len(received_bodies(deployment.queue_urls["transactional"])) == 3


@pytest.fixture
def fresh_default():
    publisher_module.configure(None)
    yield
    publisher_module.configure(None)


def test_module_level_publish_uses_the_stage_from_the_environment(deployment, monkeypatch, fresh_default):
    monkeypatch.setenv(Env.STAGE, "test")

    result = publisher_module.publish("payments.capture", {"id": 7}, "pay_7")

    assert result.tier == "critical"
    assert received_bodies(deployment.queue_urls["critical"])[0]["payload"] == {"id": 7}


def test_module_level_publish_prefers_explicit_urls(deployment, monkeypatch, fresh_default):
    monkeypatch.setenv(Env.STAGE, "not-deployed")  # would fail if it were used
    monkeypatch.setenv(Env.tier_var(Env.QUEUE_URL, "bulk"), deployment.queue_urls["bulk"])

    [result] = publisher_module.publish_batch(
        [{"job_type": "x.y", "payload": {}, "idempotency_key": "k", "tier": "bulk"}]
    )

    assert result.queue_url == deployment.queue_urls["bulk"]


def test_module_level_publish_without_configuration_explains_the_options(monkeypatch, fresh_default):
    monkeypatch.delenv(Env.STAGE, raising=False)

    with pytest.raises(DiscoveryError, match=r"no publisher configured: set TIERED_JOBS_STAGE"):
        publisher_module.publish("payments.capture", {}, "k")


def test_locate_falls_back_to_ssm_when_the_stack_cannot_be_read(deployment):
    from botocore.exceptions import ClientError

    class Denied:
        meta = boto3.client("cloudformation").meta

        def describe_stacks(self, **_):
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "no"}}, "DescribeStacks")

    found = discovery.locate("test", deployment.stack_name, cloudformation=Denied(), ssm=boto3.client("ssm"))

    assert found.source == "SSM /tiered-jobs/test"
    assert found.queue_urls() == deployment.queue_urls
    with pytest.raises(ClientError, match="AccessDenied"):  # both fail: the stack's error, not SSM's
        discovery.locate("prod", "TieredJobs-prod", cloudformation=Denied(), ssm=boto3.client("ssm"))


class _EveryParameter:
    """An SSM client that has every parameter asked for (a plausible value for each), and keeps the names."""

    meta = SimpleNamespace(region_name="us-east-1")

    def __init__(self, tiers: list[str]):
        self.tiers = tiers
        self.asked: list[str] = []

    def get_parameters(self, Names: list[str]) -> dict:
        assert len(Names) <= 10, "GetParameters takes at most 10 names"
        self.asked += Names
        return {"Parameters": [{"Name": name, "Value": self._value(name)} for name in Names]}

    def _value(self, name: str) -> str:
        if name == Ssm.tiers("dev"):
            return ",".join(self.tiers)
        if name == Ssm.routes("dev"):
            return json.dumps({"a.*": self.tiers[0]})
        if name.endswith(Ssm.TIER_LARGE_PAYLOADS):
            return "off"
        if name.endswith(Ssm.TIER_IDEMPOTENCY_TTL):
            return "3600"
        return f"value of {name}"


def test_a_publisher_reads_the_parameters_its_policy_grants_and_no_other():
    """Built from the stage, its first schedule, its first cancel of a queued job: every name read is one
    of the list the publisher's policy grants (``cdk/publishers.py``), and every name there is read."""
    tiers = ["critical", "transactional", "bulk-eu"]
    ssm = _EveryParameter(tiers)
    deployment = discovery.from_ssm("dev", ssm=ssm)
    assert (
        scheduling.from_ssm("dev", ssm=ssm).group_name == f"value of {Schedules.ssm('dev', Schedules.SSM_GROUP_NAME)}"
    )
    assert cancelling.from_ssm("dev", deployment, ssm=ssm).window("bulk-eu") == 3600
    # ...and the stage key's, which the policy grants too, written only on a stage with ``encryption``
    assert set(ssm.asked) == set(PublisherParameters.every("dev", tiers)) | set(PublisherParameters.optional("dev"))

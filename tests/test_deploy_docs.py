"""docs/deploy.md, docs/benchmarks.md and the install line stay true: the fixed monthly cost is the
script's output on the synthesized template, the stack's target follows the documented order, what
the stack retains is what ``tiered-jobs teardown`` finds, and the documented wheel builds."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import aws_cdk as cdk
import pytest

from bench import fixed_cost
from infra.app import CDK_DEFAULT_ACCOUNT, CDK_DEFAULT_REGION, build_app, load_cdk_context, target_env
from tests.support.wheel import build_wheel, run_outside
from tests.support.wheel import fresh_venv as make_venv
from tiered_jobs.contract.names import (
    RETAINED_RESOURCE_TYPES,
    STAGE_TAG,
    Schedules,
    alarm_key_description,
    queue_name,
    stack_name,
)

# Synthesizes a CDK app (make quick leaves it out).
pytestmark = pytest.mark.synth

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
BENCHMARKS = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def template() -> dict:
    return fixed_cost.synthesized_template()


def _block(text: str, name: str) -> str:
    match = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert match, f"no {name} block"
    return match.group(1)


# -- the fixed cost ----------------------------------------------------------------------------


def test_the_documented_fixed_cost_is_the_scripts_output(template):
    assert _block(DEPLOY, "fixed-cost") == fixed_cost.markdown(fixed_cost.fixed_costs(template))


def test_the_fixed_cost_counts_what_aws_charges_for(template):
    costs = fixed_cost.fixed_costs(template)
    rows = {row["item"].split(":")[0]: row for row in costs["fixed"]}
    alarms = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    math = [a for a in alarms if "Metrics" in a]
    # a metric-math alarm is charged per metric in it, not per expression
    expected_metrics = len(alarms) - len(math) + sum(1 for a in math for m in a["Metrics"] if "MetricStat" in m)
    assert rows["CloudWatch alarms"]["count"] == expected_metrics
    assert rows["CloudWatch dashboard"]["usd"] == 3.00 and rows["KMS customer managed keys"]["usd"] == 1.00
    assert costs["total_usd"] == round(sum(r["usd"] for r in costs["fixed"]), 2)
    assert f"**${costs['total_usd']:.2f}**" in DEPLOY


def test_the_per_million_jobs_figure_is_the_benchmarks():
    (row,) = [line for line in BENCHMARKS.splitlines() if line.startswith("| AWS cost / 1 M jobs |")]
    figure = row.split("|")[2].strip()
    assert f"**{figure} per 1 M jobs**" in DEPLOY


# -- account and region ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "context, environ, expected",
    [
        ({}, {}, None),
        ({}, {CDK_DEFAULT_ACCOUNT: "111111111111", CDK_DEFAULT_REGION: "eu-west-1"}, ("111111111111", "eu-west-1")),
        ({}, {CDK_DEFAULT_REGION: "us-east-1"}, (None, "us-east-1")),  # the CLI without credentials
        (
            {"account": "222222222222", "region": "eu-central-1"},
            {CDK_DEFAULT_ACCOUNT: "111111111111", CDK_DEFAULT_REGION: "eu-west-1"},
            ("222222222222", "eu-central-1"),
        ),
        ({"region": "ap-southeast-2"}, {CDK_DEFAULT_ACCOUNT: "111111111111"}, ("111111111111", "ap-southeast-2")),
    ],
)
def test_the_target_follows_the_documented_order(context, environ, expected):
    env = target_env(cdk.App(context=context), environ)
    assert (env.account, env.region) == expected if expected else env is None


def test_the_stack_deploys_where_the_cli_points(tmp_path):
    app = build_app(
        load_cdk_context(),
        outdir=str(tmp_path),
        environ={CDK_DEFAULT_ACCOUNT: "111111111111", CDK_DEFAULT_REGION: "eu-west-1"},
    )
    stack = app.node.find_child(stack_name("dev"))
    assert (stack.account, stack.region) == ("111111111111", "eu-west-1")


def test_app_py_passes_the_cli_variables():
    assert "main(environ=os.environ)" in (ROOT / "app.py").read_text(encoding="utf-8")  # main -> build_app(environ=...)


# -- tear-down ---------------------------------------------------------------------------------


def test_everything_retained_is_tagged_and_named_as_teardown_looks_for_it(template):
    retained = {k: r for k, r in template["Resources"].items() if r.get("DeletionPolicy") == "Retain"}
    assert retained, "a non-disposable stage retains its data"
    for logical_id, resource in retained.items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::KMS::Key":
            assert properties["Description"] == alarm_key_description("dev")
            continue
        if resource["Type"] == "AWS::S3::BucketPolicy":  # kept with its retained bucket, deleted with it
            assert properties["Bucket"]["Ref"] in retained, logical_id
            continue
        assert resource["Type"] in RETAINED_RESOURCE_TYPES, logical_id
        assert {"Key": STAGE_TAG, "Value": "dev"} in properties.get("Tags", []), logical_id
        if resource["Type"] == "AWS::SQS::Queue" and "QueueName" in properties:
            assert properties["QueueName"].startswith(queue_name("dev", ""))
        elif resource["Type"] == "AWS::Scheduler::ScheduleGroup":
            assert properties["Name"] == Schedules.group_name("dev")
        elif (
            resource["Type"] == "AWS::IAM::Role"
        ):  # the one-time jobs' role: found by its description, CloudFormation-named
            assert "RoleName" not in properties and "Path" not in properties, logical_id
            assert properties["Description"]["Fn::Join"][1][0].endswith(" stage dev in "), logical_id
        else:  # CloudFormation names them "<stack name>-<logical id>-<suffix>" (a bucket: lower-cased)
            assert not {"TableName", "LogGroupName", "BucketName"} & set(properties), logical_id


def test_readme_and_deploy_doc_show_the_real_commands():
    assert "docs/deploy.md" in README and "docs/benchmarks.md" in README
    assert "git+<this repository>" not in README and "git+https://…" not in README
    for command in (
        "npx cdk bootstrap",
        "npx cdk deploy -c stage=prod",
        "npx cdk destroy -c stage=prod",
        "tiered-jobs --stage prod teardown",
        "sts:AssumeRole",
        "-c account=",
        "CDK_DEFAULT_ACCOUNT",
    ):
        assert command in DEPLOY, command


def test_the_benchmark_table_lives_in_docs_in_the_bench_format():
    from bench import scaling
    from bench.__main__ import markdown

    assert "<!-- bench:start -->" not in README
    # The block holds the figures' table, then the scaling table (``bench/scaling.py``), as the bench writes them.
    tables: list[list[str]] = [[]]
    for line in _block(BENCHMARKS, "bench").splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    figures, scaled = [table for table in tables if table]
    assert figures[:2] == markdown([]).splitlines()[:2]
    assert all(len(line.split("|")) == 7 and line.split("|")[5].strip() in ("yes", "**no**") for line in figures[2:])
    assert scaled[:2] == scaling.markdown([]).splitlines()[:2]
    assert len(scaled) == 2 + len(scaling.BATCH_SIZES) * len(scaling.DURATIONS_MS)


# -- the install line --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The README's `pip wheel` line, offline, on a copy of the package's sources."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_the_library_and_nothing_of_the_repository(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "tiered_jobs/contract/envelope.schema.json" in names
    # The package ships no example job type, schema or route: the only JSON Schema is the envelope's,
    # and no file names a job type of this repository's example app.
    assert [n for n in names if n.endswith(".json") and n.startswith("tiered_jobs/")] == [
        "tiered_jobs/contract/envelope.schema.json"
    ]
    example_types = [p.name.removesuffix(".schema.json") for p in (ROOT / "functions/jobs/schemas").glob("*.json")]
    assert example_types, "the example app declares its job types' schemas"
    archive = zipfile.ZipFile(wheel)
    naming = {
        n: t
        for n in names
        if n.startswith("tiered_jobs/")
        for t in example_types
        if t in archive.read(n).decode("utf-8", "replace")
    }
    assert naming == {}
    assert {
        "tiered_jobs/runtime/consumer.py",
        "tiered_jobs/replay/service.py",
        "tiered_jobs/handlers/consumer.py",
        "tiered_jobs/cli/__init__.py",
        "tiered_jobs/publisher/__init__.py",
    } <= set(names)
    assert not [n for n in names if n.startswith(("infra/", "functions/", "demo/", "bench/", "emulator/", "tests/"))]


@pytest.fixture(scope="module")
def fresh_venv(wheel, tmp_path_factory) -> Path:
    """A new virtualenv outside the repository with only the wheel and its declared dependencies (no extra)."""
    return make_venv(wheel, tmp_path_factory.mktemp("venv"))


def test_the_installed_wheel_is_the_package_and_runs_the_cli(fresh_venv):
    where = run_outside(
        fresh_venv, "python", "-c", "import tiered_jobs, tiered_jobs.publisher; print(tiered_jobs.__file__)"
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(fresh_venv) and not Path(where.stdout.strip()).is_relative_to(ROOT)
    for module in ("infra", "functions", "demo", "emulator", "bench"):
        absent = run_outside(fresh_venv, "python", "-c", f"import {module}")
        assert absent.returncode != 0 and "ModuleNotFoundError" in absent.stderr, module
    shown = run_outside(fresh_venv, "tiered-jobs", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "publish" in shown.stdout and "local" not in shown.stdout.split("Commands")[-1].split()


def test_a_publisher_only_install_has_no_cdk_and_the_construct_says_how_to_get_it(fresh_venv):
    """Services that only publish install the wheel without the ``cdk`` extra: no aws-cdk-lib comes with it,
    and importing the construct says which command adds it."""
    for module in ("aws_cdk", "constructs", "cdk_nag"):
        absent = run_outside(fresh_venv, "python", "-c", f"import {module}")
        assert absent.returncode != 0 and "ModuleNotFoundError" in absent.stderr, module
    construct = run_outside(fresh_venv, "python", "-c", "from tiered_jobs.cdk import TieredJobs")
    assert construct.returncode != 0
    assert "tiered_jobs.cdk needs the CDK" in construct.stderr and "pip install 'tiered-jobs[cdk]'" in construct.stderr
    # The runtime a job imports and the publisher a service imports need no CDK.
    assert (
        run_outside(
            fresh_venv,
            "python",
            "-c",
            "from tiered_jobs.runtime import JobContext, job; from tiered_jobs.publisher import publish",
        ).returncode
        == 0
    )


def test_the_installed_cli_publishes_to_moto_on_loopback(fresh_venv):
    """`tiered-jobs publish` from the fresh virtualenv against moto's server on 127.0.0.1: the stage is
    found through its SSM parameters, as a service finds a deployed one."""
    import json

    import boto3

    from emulator.server import EmbeddedAws
    from tiered_jobs.contract.names import Ssm

    stage = "wheel"
    with EmbeddedAws() as endpoint:
        env = {k: v for k, v in endpoint.client_env().items() if v}
        clients = {
            "region_name": endpoint.region,
            "endpoint_url": endpoint.url,
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        sqs, ssm = boto3.client("sqs", **clients), boto3.client("ssm", **clients)
        queue_url = sqs.create_queue(QueueName=f"tiered-jobs-{stage}-critical")["QueueUrl"]
        for name, value in {
            Ssm.tiers(stage): "critical",
            Ssm.routes(stage): json.dumps({"payments.*": "critical"}),
            Ssm.tier(stage, "critical", Ssm.TIER_QUEUE_URL): queue_url,
        }.items():
            ssm.put_parameter(Name=name, Value=value, Type="String")
        published = run_outside(
            fresh_venv,
            "tiered-jobs",
            "--stage",
            stage,
            "publish",
            "payments.update_balance",
            "--key",
            "pay_wheel",
            "--payload",
            '{"account_id": "acc_1", "amount": 5}',
            env=env,
        )
        assert published.returncode == 0, published.stderr + published.stdout
        assert "Published payments.update_balance" in published.stdout
        (message,) = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
    body = json.loads(message["Body"])
    assert (body["type"], body["idempotency_key"], body["payload"]) == (
        "payments.update_balance",
        "pay_wheel",
        {"account_id": "acc_1", "amount": 5},
    )

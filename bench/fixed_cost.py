"""What one stage costs per month before it runs a single job, counted from the synthesized template.

    python -m bench.fixed_cost                  # cdk.json's settings: a Markdown table (docs/deploy.md embeds it)
    python -m bench.fixed_cost --profile dev    # the same stage as `npx cdk deploy -c profile=dev` makes it
    python -m bench.fixed_cost --json

The template is synthesized in-process (no AWS account, no Docker) and every resource with a
monthly price is counted by type. Prices: us-east-1 public list prices, free tiers ignored;
edit ``PRICES`` for another region. Usage-priced parts (PITR storage, traces, logs, S3 storage) are listed with
their unit price beside the fixed ones; the per-job cost is ``bench/cost.py``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

PRICES = {
    # CloudWatch: a standard-resolution alarm costs per metric it watches (a metric-math alarm per
    # metric in its expression; the expression is free); high resolution (period < 60 s) more.
    "alarm_metric_standard": 0.10,
    "alarm_metric_high_resolution": 0.30,
    "composite_alarm": 0.50,
    "dashboard": 3.00,
    # KMS: a customer managed key; each of its first two automatic rotations adds as much again.
    "kms_key": 1.00,
    # SSM Parameter Store: standard parameters are free, advanced ones are not.
    "ssm_parameter_standard": 0.00,
    "ssm_parameter_advanced": 0.05,
    # Usage-priced: shown with their unit, not added to the fixed total.
    "dynamodb_pitr_per_gb_month": 0.20,
    "xray_per_million_traces": 5.00,
    "logs_ingested_per_gb": 0.50,
    "logs_stored_per_gb_month": 0.03,
    "s3_standard_per_gb_month": 0.023,
    "s3_put_per_thousand": 0.005,
}


def _alarm_metrics(properties: Mapping[str, Any]) -> tuple[int, bool]:
    """(metrics the alarm is charged for, high resolution?)."""
    metrics = properties.get("Metrics")
    if metrics:
        stats = [m["MetricStat"] for m in metrics if "MetricStat" in m]
        high = any(int(s.get("Period", 60)) < 60 for s in stats)
        return len(stats), high
    return 1, int(properties.get("Period", 60)) < 60


def fixed_costs(template: Mapping[str, Any]) -> dict[str, Any]:
    """Monthly fixed cost rows (``item``, ``count``, ``unit``, ``usd``) and usage-priced rows of a template."""
    resources = list(template.get("Resources", {}).values())

    def of(kind: str) -> list[Mapping[str, Any]]:
        return [r.get("Properties", {}) for r in resources if r["Type"] == kind]

    alarms = of("AWS::CloudWatch::Alarm")
    standard = high = 0
    for properties in alarms:
        count, is_high = _alarm_metrics(properties)
        high += count if is_high else 0
        standard += 0 if is_high else count
    composite = len(of("AWS::CloudWatch::CompositeAlarm"))
    parameters = of("AWS::SSM::Parameter")
    advanced = sum(1 for p in parameters if p.get("Tier") == "Advanced")
    keys = of("AWS::KMS::Key")
    rows = [
        (
            f"CloudWatch alarms: {len(alarms)} alarms watching {standard} metrics (standard resolution)",
            standard,
            PRICES["alarm_metric_standard"],
        ),
        ("CloudWatch alarms: metrics at high resolution", high, PRICES["alarm_metric_high_resolution"]),
        ("CloudWatch composite alarms", composite, PRICES["composite_alarm"]),
        ("CloudWatch dashboard", len(of("AWS::CloudWatch::Dashboard")), PRICES["dashboard"]),
        ("KMS customer managed keys", len(keys), PRICES["kms_key"]),
        (
            f"SSM parameters: {len(parameters) - advanced} standard",
            len(parameters) - advanced,
            PRICES["ssm_parameter_standard"],
        ),
        ("SSM parameters: advanced", advanced, PRICES["ssm_parameter_advanced"]),
    ]
    fixed = [
        {"item": item, "count": count, "unit_usd": unit, "usd": round(count * unit, 2)}
        for item, count, unit in rows
        if count
    ]
    tables = of("AWS::DynamoDB::Table")
    pitr = sum(1 for t in tables if t.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled"))
    traced = sum(1 for f in of("AWS::Lambda::Function") if f.get("TracingConfig", {}).get("Mode") == "Active")
    log_groups = of("AWS::Logs::LogGroup")
    usage = [
        {
            "item": f"DynamoDB point-in-time recovery on {pitr} of {len(tables)} tables",
            "price": f"${PRICES['dynamodb_pitr_per_gb_month']:.2f} per GB-month of table size",
        },
        {
            "item": f"X-Ray active tracing on {traced} functions",
            "price": f"${PRICES['xray_per_million_traces']:.2f} per 1 M traces recorded (sampled)",
        },
        {
            "item": f"CloudWatch Logs: {len(log_groups)} log groups, kept "
            + " / ".join(
                f"{days} days" if days else "forever"
                for days in sorted({g.get("RetentionInDays") for g in log_groups}, key=str)
            ),
            "price": f"${PRICES['logs_ingested_per_gb']:.2f} per GB ingested, "
            f"${PRICES['logs_stored_per_gb_month']:.2f} per GB-month stored",
        },
    ]
    buckets = of("AWS::S3::Bucket")
    if buckets:  # the discard archive: nothing while no letter is discarded
        expiry = sorted(
            {
                rule["ExpirationInDays"]
                for b in buckets
                for rule in b.get("LifecycleConfiguration", {}).get("Rules", [])
                if "ExpirationInDays" in rule
            }
        )
        usage.append(
            {
                "item": f"S3: {len(buckets)} bucket(s), objects kept "
                + (" / ".join(f"{days} days" for days in expiry) or "forever"),
                "price": f"${PRICES['s3_standard_per_gb_month']:.3f} per GB-month stored, "
                f"${PRICES['s3_put_per_thousand']:.3f} per 1,000 PUTs",
            }
        )
    rotated = [r.get("EnableKeyRotation") for r in keys]
    notes = (
        [
            f"KMS keys rotate yearly; each of a key's first two rotations adds ${PRICES['kms_key']:.2f} per month "
            f"(${len(rotated) * 3 * PRICES['kms_key']:.2f} per month for the keys from the third year)"
        ]
        if any(rotated)
        else []
    )
    return {
        "fixed": fixed,
        "total_usd": round(sum(r["usd"] for r in fixed), 2),
        "usage": usage,
        "notes": notes,
        "prices": PRICES,
    }


def markdown(costs: Mapping[str, Any]) -> str:
    lines = ["| fixed monthly cost (us-east-1) | count | unit | per month |", "|---|---|---|---|"]
    lines += [f"| {r['item']} | {r['count']} | ${r['unit_usd']:.2f} | ${r['usd']:.2f} |" for r in costs["fixed"]]
    lines.append(f"| **total per stage** | | | **${costs['total_usd']:.2f}** |")
    lines += ["", "| priced by use | price |", "|---|---|"]
    lines += [f"| {r['item']} | {r['price']} |" for r in costs["usage"]]
    lines += [f"\nNote: {note}." for note in costs["notes"]]
    return "\n".join(lines) + "\n"


def synthesized_template(profile: str | None = None) -> dict[str, Any]:
    """The default stage's template, synthesized in-process from ``cdk.json`` (and cdk-nag-checked); ``profile``
    as ``-c profile=`` gives it (``settings/profile.py``)."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from infra.app import PROFILE_OVERRIDE_KEY, build_app, load_cdk_context
    from tiered_jobs.cdk.settings import AppSettings
    from tiered_jobs.contract.names import CONTEXT_KEY, stack_name

    context = load_cdk_context()
    if profile is not None:
        context[PROFILE_OVERRIDE_KEY] = profile
    stage = AppSettings.from_context(context[CONTEXT_KEY]).stage
    with tempfile.TemporaryDirectory() as outdir:
        assembly = build_app(context, outdir=outdir).synth()
        return assembly.get_stack_by_name(stack_name(stage)).template


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fixed_cost", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    parser.add_argument("--profile", help="the stage's profile, as -c profile= gives it (full, dev)")
    args = parser.parse_args(argv)
    costs = fixed_costs(synthesized_template(args.profile))
    sys.stdout.write(json.dumps(costs, indent=2) + "\n" if args.json else markdown(costs))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Publishers in other accounts (``publishers``): the tier queues' and the stage key's policies admit exactly
the listed accounts (and, with ``organization_id``, only their principals inside that organization), and the
stage manifest tells such a publisher where to send.

Only the main tier queues are shared: a publisher never sends to a DLQ. Queues under SSE-SQS need no key grant
(SQS encrypts with its own keys, whoever sends); under the stage's key, a key the stack makes gets the grant in
its policy, on ``kms:ViaService`` SQS only, and a team's own key needs the same statement added by its owners
(``docs/deploy.md``, "Publishers in other accounts"). No tier queue is under the AWS-managed ``alias/aws/sqs``,
the one key that cannot be shared across accounts (its policy cannot be changed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Aws, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from tiered_jobs.contract.manifest import OUTPUT_KEY, StageManifest, parameter_name

from .settings.publishers import PublisherAccounts

SEND_ACTIONS = ("sqs:SendMessage",)
KEY_ACTIONS = ("kms:GenerateDataKey", "kms:Decrypt")
STATEMENT_SID = "AllowPublishersOfOtherAccounts"


def org_condition(accounts: PublisherAccounts) -> dict[str, Any]:
    return {"StringEquals": {"aws:PrincipalOrgID": accounts.organization_id}} if accounts.organization_id else {}


class ForeignPublishers(Construct):
    """Queue and key policy grants for the other accounts' publishers, and the stage manifest they read."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: str,
        accounts: PublisherAccounts,
        queues: Mapping[str, sqs.IQueue],
        routes: Mapping[str, str],
        key: kms.IKey | None,
    ) -> None:
        super().__init__(scope, construct_id)
        principals: Sequence[iam.IPrincipal] = [iam.AccountPrincipal(account) for account in accounts.accounts]
        for queue in queues.values():
            queue.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=STATEMENT_SID,
                    principals=list(principals),
                    actions=list(SEND_ACTIONS),
                    resources=[queue.queue_arn],
                    conditions=org_condition(accounts),
                )
            )
        if isinstance(key, kms.Key):  # a key the stack makes; a team's own key's policy is its owners'
            key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=STATEMENT_SID,
                    principals=list(principals),
                    actions=list(KEY_ACTIONS),
                    resources=["*"],
                    conditions={
                        "StringEquals": {
                            "kms:ViaService": f"sqs.{Aws.REGION}.amazonaws.com",
                            **org_condition(accounts).get("StringEquals", {}),
                        }
                    },
                )
            )
        manifest = StageManifest(
            stage=stage,
            queues={name: queue.queue_url for name, queue in queues.items()},
            routes=dict(routes),
            kms_key_arn=key.key_arn if key is not None else None,
        )
        # Tokens (queue URLs, the key's ARN) become Fn::Join parts: the deployed value is plain JSON.
        text = Stack.of(self).to_json_string(manifest.to_dict())
        description = "Stage manifest for publishers in other accounts (JSON: queues, routes, key)"
        CfnOutput(self, OUTPUT_KEY, value=text, description=description).override_logical_id(OUTPUT_KEY)
        self.parameter = ssm.StringParameter(
            self, "Manifest", parameter_name=parameter_name(stage), string_value=text, description=description
        )

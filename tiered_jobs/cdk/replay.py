"""The replay function: moves dead letters back to their main queue, per tier, on demand.

It may read and delete from every tier's DLQ, send to every tier's main queue, drive SQS's
native message move tasks on the DLQs, pause and resume its stage's event source mappings (by
ARN), and write discarded letters to the stage's discard archive
(``DiscardArchive``); nothing else. Optional shareable console test events make the usual
operations one click in the Lambda console.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CfnResource, Stack
from aws_cdk import aws_eventschemas as eventschemas
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from tiered_jobs.contract.names import Env, Handlers, function_name
from tiered_jobs.contract.replay_events import EVENT_FIELDS, console_events, routed_glob

from .discard_archive import DiscardArchive
from .function import FunctionProps, LambdaPlatform
from .nag import acknowledge
from .settings import CREATE_REGISTRY, AppSettings
from .tier import Tier

#: The account-wide registry where the Lambda console keeps shareable test events.
CONSOLE_EVENTS_REGISTRY = "lambda-testevent-schemas"
REPLAY_TIMEOUT_SECONDS = 300
REPLAY_MEMORY_MB = 256
#: SQS's native redrive (``StartMessageMoveTask``) on the DLQs.
MESSAGE_MOVE_ACTIONS = ("sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks", "sqs:CancelMessageMoveTask")
#: Pausing and resuming a tier (``tiered_jobs.replay.pause``): read its mapping, flip it, tag who and when.
MAPPING_ACTIONS = (
    "lambda:GetEventSourceMapping",
    "lambda:UpdateEventSourceMapping",
    "lambda:ListTags",
    "lambda:TagResource",
    "lambda:UntagResource",
)


def console_schema_name(function: str) -> str:
    """The Lambda console looks up a function's shareable events under this schema name."""
    return f"_{function}-schema"


def console_schema_content(tiers: Sequence[str], routes: Mapping[str, str]) -> dict[str, Any]:
    """OpenAPI 3 document in the console's format: the events live in ``components.examples``; a
    tier's job-type replay names a pattern of the app's own routes to it."""
    examples: dict[str, Any] = {}
    for tier in tiers:
        events = console_events(tier, routed_glob(tier, routes))
        examples.update({name: {"value": event} for name, event in events.items()})
    return {
        "openapi": "3.0.0",
        "info": {"version": "1.0.0", "title": "Event"},
        "paths": {},
        "components": {
            "schemas": {
                "Event": {
                    "type": "object",
                    "required": ["tier"],
                    "properties": {
                        key: {"type": _json_type(default)} if default is not None else {}
                        for key, default in EVENT_FIELDS.items()
                    },
                }
            },
            "examples": examples,
        },
    }


def _json_type(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string"}[type(value)]


class ReplayFunction(Construct):
    """The stage's replay function: inspect, replay, discard and pause for every tier, and its rights."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: AppSettings,
        platform: LambdaPlatform,
        tiers: Sequence[Tier],
    ) -> None:
        super().__init__(scope, construct_id)
        self.function_name = function_name(settings.stage, "replay")
        # Where ``discard`` keeps the letters it deletes (without it the function refuses discard).
        self.archive = DiscardArchive(self, "DiscardArchive", settings=settings)
        # Per tier: its queues, and its idempotency window (the replay refuses older letters by default).
        replay_tiers = {
            t.name: {
                "queue_url": t.queue.queue_url,
                "dlq_url": t.dlq.queue_url,
                "idempotency_ttl_seconds": t.settings.idempotency_ttl_seconds,
            }
            for t in tiers
        }
        self.function: lambda_.Function = platform.function(
            self,
            "Function",
            FunctionProps(
                function_name=self.function_name,
                handler=Handlers.REPLAY,
                description=f"Replays dead letters of the tiered-jobs {settings.stage} tiers",
                timeout_seconds=REPLAY_TIMEOUT_SECONDS,
                memory_mb=REPLAY_MEMORY_MB,
                environment={
                    Env.STAGE: settings.stage,
                    Env.REPLAY_TIERS: Stack.of(self).to_json_string(replay_tiers),
                    Env.DISCARD_ARCHIVE_BUCKET: self.archive.bucket_name,
                    Env.REPLAY_MAPPINGS: Stack.of(self).to_json_string({t.name: t.mapping_uuid for t in tiers}),
                },
            ),
        )
        for tier in tiers:
            tier.dlq.grant_consume_messages(self.function)
            tier.queue.grant_send_messages(self.function)
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=list(MESSAGE_MOVE_ACTIONS), resources=[t.dlq.queue_arn for t in tiers])
        )
        # Its pause and resume actions: its own stage's mappings only, by ARN (never the consumers' IAM).
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=list(MAPPING_ACTIONS), resources=[t.mapping_arn for t in tiers])
        )
        assert self.function.role is not None  # the function made its own role
        self.archive.allow_writes(self.function.role)
        for rule, reason in (
            (
                "Serverless-LambdaDLQ",
                "Invoked synchronously by operators (console, CLI): errors return to the caller. A circuit "
                "breaker's alarm invokes it asynchronously with CloudWatch's event, which a queue could not replay "
                "usefully: Lambda retries it twice, and the alarm's next change of state invokes it again.",
            ),
            (
                "Serverless-LambdaAsyncFailureDestination",
                "Operators invoke it synchronously. Only a circuit breaker's alarms and its reconcile rule invoke it "
                "asynchronously, and a stack with a breaker gives it an on-failure destination (the alarm topic, "
                "circuit_breaker.py); without one nothing invokes it so.",
            ),
        ):
            acknowledge(self.function, rule, reason)
        if settings.console_test_events:
            self._console_test_events(settings, [t.name for t in tiers])

    def _console_test_events(self, settings: AppSettings, tier_names: list[str]) -> None:
        registry: CfnResource | None = None
        if settings.console_test_events == CREATE_REGISTRY:
            # Account-wide and usually created by the console itself: only when asked to.
            registry = eventschemas.CfnRegistry(
                self,
                "ConsoleEventsRegistry",
                registry_name=CONSOLE_EVENTS_REGISTRY,
                description="Shareable Lambda console test events",
            )
        schema = eventschemas.CfnSchema(
            self,
            "ConsoleTestEvents",
            registry_name=CONSOLE_EVENTS_REGISTRY,
            schema_name=console_schema_name(self.function_name),
            type="OpenApi3",
            description=f"Console test events of {self.function_name}",
            content=json.dumps(console_schema_content(tier_names, settings.routes)),
        )
        if registry is not None:
            schema.add_dependency(registry)

"""Every name that infrastructure and runtime share, written once.

The CDK construct (``tiered_jobs.cdk``), the Lambda runtime (``tiered_jobs.runtime``,
``tiered_jobs.handlers``), the jobs in ``functions/``, the publisher, the CLI and the emulator all
import these constants; none of them repeats the strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

#: The tiers the stack provisions when ``cdk.json`` names none.
DEFAULT_TIERS: tuple[str, ...] = ("critical", "transactional", "bulk")
#: A tier name: lower-case, starts with a letter; it becomes part of resource names.
TIER_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,29}$")
#: A stage name (``dev``, ``prod``...): it names the stack, SSM parameters and outputs.
STAGE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,19}$")

#: The name of a resource the jobs use (``resources`` in ``cdk.json``): lower-case words joined by
#: ``_``, each starting with a letter, so its environment variable and output key map back to it.
RESOURCE_NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(_[a-z][a-z0-9]*)*$")
#: Longest resource name (it becomes part of an SSM parameter, an output key and a variable name).
RESOURCE_NAME_MAX_CHARS = 40

#: The key in ``cdk.json`` context that holds all settings of the application.
CONTEXT_KEY = "tiered_jobs"
#: The context key local mode sets to run any app's stage on the embedded AWS:
#: ``{"settings": {...}, "tier_settings": {...}}``, applied over the app's own settings (from
#: ``cdk.json`` or code) by the settings model before validation (``with_local_overrides``).
LOCAL_OVERRIDES_CONTEXT_KEY = "tiered_jobs:local"
#: The tag local mode puts on the stack it deploys (value ``true``): what an operator command reads to know
#: that the account it talks to is local mode's embedded AWS (``doctor`` then reports local mode's own limits).
LOCAL_MODE_STACK_TAG = "tiered-jobs:local-mode"
PROJECT = "tiered-jobs"

#: Largest message SQS accepts (bytes of body plus attributes).
SQS_MAX_MESSAGE_BYTES = 1_048_576
#: Largest visibility timeout SQS accepts (12 hours).
SQS_MAX_VISIBILITY_SECONDS = 43_200
#: Largest delay SQS accepts on a message (15 minutes).
SQS_MAX_DELAY_SECONDS = 900
#: Message attributes SQS allows on one message (a dead letter's ``DeadLetter.*`` count too).
SQS_MAX_MESSAGE_ATTRIBUTES = 10
#: Entries per SendMessageBatch / DeleteMessageBatch / ChangeMessageVisibilityBatch.
SQS_MAX_BATCH_ENTRIES = 10
#: What SQS accepts as a ``MessageGroupId`` (1-128 alphanumerics and punctuation); a tenant id is one.
SQS_MESSAGE_GROUP_ID_PATTERN = re.compile(r"""^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}$""")


#: Tag the stack puts on what it retains on deletion (queues, DLQs, tables, log groups, the archive bucket,
#: the schedule group and the one-time jobs' role): ``tiered-jobs teardown`` finds a deleted stage's leftovers
#: by it, and by nothing else (CloudFormation's stack tag is on every resource of the stack).
STAGE_TAG = "tiered-jobs:stage"
#: The resource types that carry ``STAGE_TAG``. The alarm topic's KMS key is found by its
#: description (:func:`alarm_key_description`) instead: moto's CloudFormation cannot tag a key.
RETAINED_RESOURCE_TYPES: tuple[str, ...] = (
    "AWS::SQS::Queue",
    "AWS::DynamoDB::Table",
    "AWS::Logs::LogGroup",
    "AWS::Scheduler::ScheduleGroup",  # it holds the pending one-time jobs
    "AWS::S3::Bucket",  # the discard archive: the letters an operator dropped
    "AWS::IAM::Role",  # every role is tagged; only the one-time jobs' role is retained (the pending jobs run with it)
)


def alarm_key_description(stage: str) -> str:
    """The description of the stage's alarm-topic KMS key (retained; ``teardown`` finds it by it)."""
    return f"Encrypts the {PROJECT} {stage} alarm topic"


def stack_name(stage: str) -> str:
    """The CloudFormation stack name of a stage, e.g. ``TieredJobs-dev``."""
    return f"TieredJobs-{stage}"


def discard_archive_prefix(stage: str, tier: str | None = None) -> str:
    """Where the replay function's ``discard`` archives letters in its bucket: ``discarded/<stage>/<tier>/``
    (``tier=None``: the stage's folder, ``discarded/<stage>/``, the only one the function may write under)."""
    return f"discarded/{stage}/" + (f"{tier}/" if tier is not None else "")


class Env:
    """Environment variable names set on the Lambda functions by the stack."""

    STAGE = "TIERED_JOBS_STAGE"
    TIER = "TIERED_JOBS_TIER"
    QUEUE_URL = "TIERED_JOBS_QUEUE_URL"
    DLQ_URL = "TIERED_JOBS_DLQ_URL"
    MAX_ATTEMPTS = "TIERED_JOBS_MAX_ATTEMPTS"
    #: Comma-separated seconds, e.g. ``5,30,120,600``.
    RETRY_SCHEDULE = "TIERED_JOBS_RETRY_SCHEDULE"
    #: Fraction in [0, 1): the delay is drawn from ``delay * (1 ± jitter)``.
    RETRY_JITTER = "TIERED_JOBS_RETRY_JITTER"
    IDEMPOTENCY_TABLE = "TIERED_JOBS_IDEMPOTENCY_TABLE"
    IDEMPOTENCY_TTL_SECONDS = "TIERED_JOBS_IDEMPOTENCY_TTL_SECONDS"
    #: Milliseconds: the consumer starts no record when less than this remains of its invocation.
    TIME_BUDGET_MARGIN_MS = "TIERED_JOBS_TIME_BUDGET_MARGIN_MS"
    #: Consumer: the main queue's retention (seconds), its function's timeout (seconds) and its event source
    #: mapping's batching window (seconds): the time limits a job's own retry schedule is checked against.
    RETENTION_SECONDS = "TIERED_JOBS_RETENTION_SECONDS"
    TIMEOUT_SECONDS = "TIERED_JOBS_TIMEOUT_SECONDS"
    BATCHING_WINDOW_SECONDS = "TIERED_JOBS_BATCHING_WINDOW_SECONDS"
    #: Consumer: one variable per resource of the tier's jobs (``resource_var``): a table name or queue URL.
    RESOURCE_PREFIX = "TIERED_JOBS_RESOURCE_"
    #: Replay function: JSON object ``{tier: {"queue_url": ..., "dlq_url": ..., "idempotency_ttl_seconds": ...}}``.
    REPLAY_TIERS = "TIERED_JOBS_REPLAY_TIERS"
    #: Replay function: the S3 bucket its ``discard`` action archives letters to (unset: no Lambda discard).
    DISCARD_ARCHIVE_BUCKET = "TIERED_JOBS_DISCARD_ARCHIVE_BUCKET"
    #: Replay function: JSON object ``{tier: event source mapping UUID}`` (its ``pause`` and ``resume`` actions).
    REPLAY_MAPPINGS = "TIERED_JOBS_REPLAY_MAPPINGS"
    #: Replay function: the stage's alarm topic ARN, set only when a tier has a circuit breaker (the
    #: function pages there when a breaker closes; the opening page is the alarm's own).
    BREAKER_PAGE_TOPIC = "TIERED_JOBS_BREAKER_PAGE_TOPIC"
    #: Publisher: the routing table as a JSON object ``{job type glob: tier}`` (with the
    #: per-tier queue URLs ``tier_var(QUEUE_URL, tier)``, configures a publisher without AWS look-ups).
    ROUTES = "TIERED_JOBS_ROUTES"
    #: Consumer: the tier's rate limits as JSON (``tiered_jobs.contract.rate_limits``); absent: no limit.
    RATE_LIMITS = "TIERED_JOBS_RATE_LIMITS"
    #: Consumer: the DynamoDB table holding the token buckets (set only on rate-limited tiers).
    RATE_LIMIT_TABLE = "TIERED_JOBS_RATE_LIMIT_TABLE"
    #: Consumer and publisher: the stage's unique-jobs table (``tiered_jobs.contract.unique``): the
    #: publisher's ``unique_for=`` locks there, the consumer releases a finished job's lock.
    UNIQUE_TABLE = "TIERED_JOBS_UNIQUE_TABLE"
    #: Consumer and publisher: the stage's batches table (``tiered_jobs.contract.batches``): the publisher
    #: opens and seals a batch or chain there, the consumer counts each finished member.
    BATCH_TABLE = "TIERED_JOBS_BATCH_TABLE"
    #: Consumer: comma-separated modules the handler imports so that their ``@job`` handlers register
    #: (a stack sets its ``JobsCode`` module, e.g. ``myapp.jobs``).
    JOB_MODULES = "TIERED_JOBS_JOB_MODULES"
    #: Folders of an app's own payload schemas (``os.pathsep``-separated), searched before the
    #: package's: a publishing service points it at a copy of the job folder's ``schemas/``.
    SCHEMA_DIRS = "TIERED_JOBS_SCHEMA_DIRS"
    #: Consumer (and, per tier with ``tier_var``, publisher): the tier's large-payload setting as JSON
    #: (``tiered_jobs.contract.large_payloads.Offload``); absent: the tier stores no body in S3.
    LARGE_PAYLOADS = "TIERED_JOBS_LARGE_PAYLOADS"

    @staticmethod
    def tier_var(name: str, tier: str) -> str:
        """A per-tier variable: ``tier_var(Env.QUEUE_URL, "bulk-eu") == "TIERED_JOBS_QUEUE_URL_BULK_EU"``."""
        return f"{name}_{tier.upper().replace('-', '_')}"

    @staticmethod
    def resource_var(name: str) -> str:
        """A resource's variable: ``resource_var("invoice_lines") == "TIERED_JOBS_RESOURCE_INVOICE_LINES"``."""
        return f"{Env.RESOURCE_PREFIX}{name.upper()}"

    @staticmethod
    def resources_in(environ: Mapping[str, str]) -> dict[str, str]:
        """``{resource name: value}`` of every ``resource_var`` set in ``environ`` (the inverse of ``resource_var``)."""
        prefix = Env.RESOURCE_PREFIX
        return {key[len(prefix) :].lower(): value for key, value in environ.items() if key.startswith(prefix) and value}

    # Powertools' own variables (set by the stack, read by Powertools).
    POWERTOOLS_SERVICE_NAME = "POWERTOOLS_SERVICE_NAME"
    POWERTOOLS_METRICS_NAMESPACE = "POWERTOOLS_METRICS_NAMESPACE"
    POWERTOOLS_LOG_LEVEL = "POWERTOOLS_LOG_LEVEL"
    #: Powertools' tracer switch, ``"true"`` on a tier whose ``tracing`` is off (runtime/tracing.py reads it).
    POWERTOOLS_TRACE_DISABLED = "POWERTOOLS_TRACE_DISABLED"


class Handlers:
    """Lambda handler strings: the library's thin entry points (``tiered_jobs.handlers``)."""

    CONSUMER = "tiered_jobs.handlers.consumer.handler"
    REPLAY = "tiered_jobs.handlers.replay.handler"


#: Top-level template metadata of a stack that holds Tiered Jobs; local mode finds such stacks in any
#: app's cloud assembly by it: ``{"stage": ..., "jobs": {"path": <job folder, relative to the app's
#: folder>, "module": <its import name>}}`` (``tiered_jobs.cdk.packaging.JobsSource`` rebuilds the code).
TEMPLATE_METADATA_KEY = "TieredJobs"


class DeadLetter:
    """String message attributes our consumer adds when it dead-letters a message itself."""

    REASON = "DeadLetter.Reason"
    ERROR_TYPE = "DeadLetter.ErrorType"
    ERROR_MESSAGE = "DeadLetter.ErrorMessage"
    ATTEMPTS = "DeadLetter.Attempts"
    FIRST_FAILED_AT = "DeadLetter.FirstFailedAt"
    LAST_FAILED_AT = "DeadLetter.LastFailedAt"
    SOURCE_QUEUE = "DeadLetter.SourceQueue"
    JOB_TYPE = "DeadLetter.JobType"
    #: Where the job failed: one versioned JSON string (``tiered_jobs.contract.letter_traceback``),
    #: the innermost frame of the job's own code and the last frames of its traceback, bounded. Only
    #: on letters of a job that raised (not on ``requeue_failed`` ones), so it is not in :data:`ALL`.
    TRACEBACK = "DeadLetter.Traceback"

    PREFIX = "DeadLetter."
    ALL: tuple[str, ...] = (
        REASON,
        ERROR_TYPE,
        ERROR_MESSAGE,
        ATTEMPTS,
        FIRST_FAILED_AT,
        LAST_FAILED_AT,
        SOURCE_QUEUE,
        JOB_TYPE,
    )

    #: Values of ``DeadLetter.Reason``.
    REASON_PERMANENT = "permanent"
    REASON_RETRIES_EXHAUSTED = "retries_exhausted"
    #: The job was held or deferred on its queue's last receive and SQS refused its re-sent copy:
    #: returning it would let the redrive move it without reasons, so it is dead-lettered with this.
    REASON_REQUEUE_FAILED = "requeue_failed"
    #: The job's deadline (envelope ``expires_at``) passed before it started, or it was cancelled,
    #: and the discard archive could not take it: the DLQ keeps it instead (never lost, never run).
    REASON_EXPIRED = "expired"
    REASON_CANCELLED = "cancelled"
    #: The job's envelope is newer than its consumer (a rolled-back consumer met a newer producer's
    #: job) and it was held past the bound: deploy the newer consumer, then replay it.
    REASON_ENVELOPE_TOO_NEW = "envelope_too_new"
    #: A batch member or chain link finished, but its count (or the callback it made due) could not be
    #: written on its queue's last receive: returned, the redrive would move it without reasons. A
    #: replay counts it, answered from its idempotency record (the job does not run again).
    REASON_BATCH_COUNT_FAILED = "batch_count_failed"
    #: What tools report for a letter without reasons (moved by SQS redrive: crash / timeout).
    REASON_UNKNOWN = "unknown"
    #: Longest ``DeadLetter.ErrorMessage`` kept (characters); longer ones are cut with an ellipsis.
    MAX_ERROR_MESSAGE_CHARS = 1024


class Attributes:
    """Message attributes of our own on job messages (besides ``DeadLetter.*`` and ``Replay.*``).

    The consumer sets them on the copies it sends of a job it held (rate limit) or deferred (time
    budget): a copy is a new message with a fresh receive count and a fresh ``SentTimestamp``, and
    these carry what the job had before. A dead letter folds them into its ``DeadLetter.*``
    reasons and drops them, so a letter moved back (either replay mode) starts afresh.
    """

    PREFIX = "TieredJobs."
    #: Number: attempts the job had already spent before this copy of its message was sent, so the
    #: attempt number is ``PRIOR_ATTEMPTS + ApproximateReceiveCount``.
    PRIOR_ATTEMPTS = "TieredJobs.PriorAttempts"
    #: String, ISO 8601: when this run of the job entered its tier queue (its publish, a schedule's
    #: fire, or a replay): the job's age (``JobAge``) counts from it across holds and deferrals.
    ENQUEUED_AT = "TieredJobs.EnqueuedAt"
    #: String, ISO 8601: when the job first failed (``DeadLetter.FirstFailedAt`` of its letter),
    #: carried across holds, deferrals and batch replays.
    FIRST_FAILED_AT = "TieredJobs.FirstFailedAt"
    #: String, ``<start µs since the epoch> <bucket key>``: the start the rate limit reserved for a
    #: job it held (its token is spent), so the copy runs then without claiming again. Honoured on
    #: the copy's first receive only: a retry, a replay or a sweep's copy claims afresh.
    TURN = "TieredJobs.Turn"
    ALL: tuple[str, ...] = (PRIOR_ATTEMPTS, ENQUEUED_AT, FIRST_FAILED_AT, TURN)


class Replay:
    """Message attributes the replay adds to a message it moves back to its main queue."""

    PREFIX = "Replay."
    COUNT = "Replay.Count"
    AT = "Replay.At"


class Metrics:
    """CloudWatch metric names and dimensions published by the consumer (EMF)."""

    NAMESPACE = "TieredJobs"
    SERVICE = "tiered-jobs"
    #: Powertools adds ``service`` (= ``SERVICE``) to every metric; alarms must name it too.
    DIM_SERVICE = "service"
    DIM_STAGE = "Stage"
    DIM_TIER = "Tier"
    DIM_JOB_TYPE = "JobType"

    #: Every record the consumer started (one attempt of one job); deferred records are not.
    PROCESSED = "JobsProcessed"
    SUCCEEDED = "JobsSucceeded"
    #: Jobs failed for good: dead-lettered (permanent or out of retries), or kept in the queue
    #: because the DLQ refused the final copy. Numerator of the failure rate.
    FAILED = "JobsFailed"
    #: Failed attempts that will be retried (not failures of the job).
    RETRIED = "JobsRetried"
    DEAD_LETTERED = "JobsDeadLettered"
    #: Records answered from the idempotency store without running the job again.
    DUPLICATE = "JobsDuplicate"
    #: Records returned unstarted because the invocation's time budget ran out (not failures).
    DEFERRED = "JobsDeferred"
    #: Milliseconds spent on one record.
    DURATION = "JobDuration"
    #: Seconds a retried record waits before its next attempt (the jittered backoff), one value per retry.
    RETRY_DELAY = "JobRetryDelay"
    #: Records the tier's rate limit held back and re-sent with a delay: never a failure or an attempt.
    RATE_LIMITED = "JobsRateLimited"
    #: Records held because the rate limiter's table could not be read or written (throttling, an
    #: outage, a missing permission): held briefly, never run past the limit, never failed.
    RATE_LIMITER_ERRORS = "RateLimiterErrors"
    #: Records held or deferred whose re-sent copy SQS refused: they stay in the queue (a receive
    #: spent) or, on their last receive, are dead-lettered with reason ``requeue_failed``.
    REQUEUE_FAILED = "JobsRequeueFailed"
    #: Seconds from when the job entered its tier queue (``Attributes.ENQUEUED_AT``) to when the
    #: consumer decided its fate (ran, held or deferred it): survives the copies, unlike SQS's age.
    JOB_AGE = "JobAge"
    #: Jobs dropped unstarted because their deadline (envelope ``expires_at``) had passed: archived,
    #: never an attempt, never a failure.
    EXPIRED = "JobsExpired"
    #: Jobs dropped unstarted because they were cancelled (``tiered-jobs cancel``): archived, never a failure.
    CANCELLED = "JobsCancelled"
    #: Records whose envelope is newer than their consumer: held for a newer one (never an attempt),
    #: or dead-lettered with reason ``envelope_too_new`` once held past the bound.
    TOO_NEW = "JobsEnvelopeTooNew"


class Ssm:
    """SSM parameter names the stack writes so other services can find its resources."""

    @staticmethod
    def prefix(stage: str) -> str:
        return f"/{PROJECT}/{stage}"

    @staticmethod
    def tier(stage: str, tier: str, key: str) -> str:
        """``key`` is one of the ``TIER_*`` constants below."""
        return f"/{PROJECT}/{stage}/tiers/{tier}/{key}"

    TIER_QUEUE_URL = "queue-url"
    TIER_QUEUE_ARN = "queue-arn"
    TIER_DLQ_URL = "dlq-url"
    TIER_DLQ_ARN = "dlq-arn"
    #: Seconds a finished job's idempotency record is kept (the tier's ``idempotency_ttl_seconds``).
    TIER_IDEMPOTENCY_TTL = "idempotency-ttl-seconds"
    #: JSON of the tier's rate limits (``tiered_jobs.contract.rate_limits``); only on rate-limited tiers.
    TIER_RATE_LIMITS = "rate-limits"
    #: The UUID of the tier's event source mapping (``pause`` and ``resume`` update it, ``status`` reads it).
    TIER_MAPPING_UUID = "mapping-uuid"
    #: JSON of the tier's large-payload setting (``large_payloads.Offload``); only on tiers that opted in.
    TIER_LARGE_PAYLOADS = "large-payloads"

    @staticmethod
    def replay_function_name(stage: str) -> str:
        return f"/{PROJECT}/{stage}/replay-function-name"

    @staticmethod
    def idempotency_table_name(stage: str) -> str:
        return f"/{PROJECT}/{stage}/idempotency-table-name"

    @staticmethod
    def unique_table_name(stage: str) -> str:
        """The unique-jobs table (``publish(..., unique_for=)``): discovery reads it with the other names."""
        return f"/{PROJECT}/{stage}/unique-table-name"

    @staticmethod
    def batch_table_name(stage: str) -> str:
        """The batches table (``publisher.batch``, ``publisher.chain``): discovery reads it with the other names."""
        return f"/{PROJECT}/{stage}/batch-table-name"

    @staticmethod
    def resources_path(stage: str) -> str:
        """The folder of the resources' parameters (``GetParametersByPath`` lists them all)."""
        return f"/{PROJECT}/{stage}/resources"

    @staticmethod
    def resource(stage: str, name: str) -> str:
        """A resource of ``cdk.json``'s ``resources``: its table name or queue URL."""
        return f"{Ssm.resources_path(stage)}/{name}"

    @staticmethod
    def discard_archive_bucket(stage: str) -> str:
        """The bucket the replay function's ``discard`` archives letters to (``discard_archive_prefix``)."""
        return f"/{PROJECT}/{stage}/discard-archive-bucket"

    @staticmethod
    def publisher_policy_arn(stage: str) -> str:
        """ARN of the managed policy that lets a service publish to the stage's tiers."""
        return f"/{PROJECT}/{stage}/publisher-policy-arn"

    @staticmethod
    def routes(stage: str) -> str:
        """JSON object ``{job type glob: tier}``: the routing table of ``cdk.json``."""
        return f"/{PROJECT}/{stage}/routes"

    @staticmethod
    def tiers(stage: str) -> str:
        """Comma-separated tier names of the stage."""
        return f"/{PROJECT}/{stage}/tiers"


class Outputs:
    """CloudFormation output keys (alphanumeric: CloudFormation requires it)."""

    @staticmethod
    def tier(tier: str, what: str) -> str:
        """E.g. ``Outputs.tier("critical", Outputs.QUEUE_URL) == "CriticalQueueUrl"``."""
        return "".join(part.capitalize() for part in tier.split("-")) + what

    QUEUE_URL = "QueueUrl"
    QUEUE_ARN = "QueueArn"
    DLQ_URL = "DlqUrl"
    DLQ_ARN = "DlqArn"
    CONSUMER_FUNCTION_NAME = "ConsumerFunctionName"

    REPLAY_FUNCTION_NAME = "ReplayFunctionName"
    IDEMPOTENCY_TABLE_NAME = "IdempotencyTableName"
    UNIQUE_TABLE_NAME = "UniqueTableName"
    BATCH_TABLE_NAME = "BatchTableName"
    ALARM_TOPIC_ARN = "AlarmTopicArn"
    DASHBOARD_NAME = "DashboardName"
    ROUTES = "Routes"
    PUBLISHER_POLICY_ARN = "PublisherPolicyArn"
    DISCARD_ARCHIVE_BUCKET = "DiscardArchiveBucket"
    #: The stage's bucket of offloaded job bodies (only when a tier sets ``large_payloads``).
    LARGE_PAYLOAD_BUCKET = "LargePayloadBucket"
    #: Per tier that sets ``large_payloads``: its setting's JSON (``large_payloads.Offload``).
    LARGE_PAYLOADS = "LargePayloads"

    @staticmethod
    def resource(name: str) -> str:
        """A resource's table name or queue URL: ``Outputs.resource("invoice_lines") == "ResourceInvoiceLines"``."""
        return "Resource" + "".join(part.capitalize() for part in name.split("_"))


class Alarms:
    """CloudWatch alarm names: ``tiered-jobs-<stage>-<tier>-<kind>`` (the CLI and local mode find them by name)."""

    DLQ_DEPTH = "dlq-depth"
    OLDEST_MESSAGE_AGE = "oldest-message-age"
    FAILURE_RATE = "failure-rate"
    DURATION = "duration"
    ERRORS = "errors"
    THROTTLES = "throttles"
    JOB_AGE = "job-age"
    #: Every tier's alarms.
    KINDS: tuple[str, ...] = (DLQ_DEPTH, OLDEST_MESSAGE_AGE, FAILURE_RATE, DURATION, ERRORS, THROTTLES, JOB_AGE)
    #: A rate-limited tier's alarm on its limiter's table (not in ``KINDS``: other tiers have none).
    RATE_LIMITER = "rate-limiter"
    #: A tier with a circuit breaker: the alarm that opens it (pages), and the one whose first
    #: minute of succeeded jobs closes it after the probe (never pages: it only signals).
    CIRCUIT_BREAKER = "circuit-breaker"
    CIRCUIT_PROBE = "circuit-probe"
    #: Every kind a tier may have.
    ALL_KINDS: tuple[str, ...] = (*KINDS, RATE_LIMITER, CIRCUIT_BREAKER)

    @staticmethod
    def prefix(stage: str) -> str:
        return f"{PROJECT}-{stage}-"

    @staticmethod
    def name(stage: str, tier: str, kind: str) -> str:
        return f"{PROJECT}-{stage}-{tier}-{kind}"


def queue_name(stage: str, tier: str, *, dlq: bool = False) -> str:
    """Explicit queue names (``tiered-jobs-<stage>-<tier>[-dlq]``): the DLQ's redrive-allow policy names its
    main queue by ARN, which a generated name would turn into a circular reference."""
    return f"{PROJECT}-{stage}-{tier}" + ("-dlq" if dlq else "")


def function_name(stage: str, role: str) -> str:
    """Explicit function names (``role`` is ``replay`` or a tier's ``<tier>-consumer``)."""
    return f"{PROJECT}-{stage}-{role}"


def consumer_function_name(stage: str, tier: str) -> str:
    """A tier's consumer: ``tiered-jobs-<stage>-<tier>-consumer``."""
    return function_name(stage, f"{tier}-consumer")


def dashboard_name(stage: str) -> str:
    """The stage's CloudWatch dashboard: ``tiered-jobs-<stage>``."""
    return f"{PROJECT}-{stage}"


class Schedules:
    """Names of the scheduled-jobs parts of a stage (EventBridge Scheduler; see ``contract.schedules``)."""

    #: ``cdk.json`` key of the periodic jobs.
    SETTINGS_KEY = "schedules"

    @staticmethod
    def group_name(stage: str) -> str:
        """The stage's schedule group (periodic and one-time schedules): ``tiered-jobs-<stage>``."""
        return f"{PROJECT}-{stage}"

    @staticmethod
    def dlq_alarm_name(stage: str) -> str:
        """Alarm on the schedules DLQ; ends in no tier alarm kind, so it never equals a tier's alarm name."""
        return f"{PROJECT}-{stage}-schedules-undelivered"

    # SSM parameters (under ``Ssm.prefix(stage)``) and output keys.
    @staticmethod
    def ssm(stage: str, key: str) -> str:
        """``key`` is one of the ``SSM_*`` constants below."""
        return f"/{PROJECT}/{stage}/schedules/{key}"

    @staticmethod
    def one_time_role_description(stage: str, region: str) -> str:
        """Description of the one-time jobs' role: retained with the group, its name is CloudFormation's
        (a redeploy never collides with it), so ``teardown`` finds it by this text (``ListRoles``
        returns it; it returns no tags) and then by its stage tag. IAM is global, hence the region: the
        same stage in two regions of one account are two roles. Not an IAM path: a path (like a name)
        is a replacement property, and replacing the role of a deployed stage would strand every
        pending one-time job on the old role."""
        return f"EventBridge Scheduler: {PROJECT} stage {stage} in {region}, one-time jobs, to any tier queue"

    SSM_GROUP_NAME = "group-name"
    SSM_ROLE_ARN = "one-time-role-arn"
    SSM_DLQ_ARN = "dlq-arn"
    #: The stage's own key (``encryption``), which one-time schedules are encrypted with; absent without one.
    SSM_KMS_KEY_ARN = "kms-key-arn"

    OUTPUT_GROUP_NAME = "ScheduleGroupName"
    OUTPUT_ROLE_ARN = "SchedulerOneTimeRoleArn"
    OUTPUT_DLQ_ARN = "SchedulesDlqArn"
    OUTPUT_DLQ_URL = "SchedulesDlqUrl"
    OUTPUT_KMS_KEY_ARN = "SchedulesKmsKeyArn"

    # Publisher configuration without AWS look-ups (with ``Env.tier_var(QUEUE_ARN_VAR, tier)``).
    ENV_GROUP_NAME = "TIERED_JOBS_SCHEDULE_GROUP"
    ENV_ROLE_ARN = "TIERED_JOBS_SCHEDULER_ROLE_ARN"
    ENV_DLQ_ARN = "TIERED_JOBS_SCHEDULES_DLQ_ARN"
    ENV_KMS_KEY_ARN = "TIERED_JOBS_SCHEDULES_KMS_KEY_ARN"
    QUEUE_ARN_VAR = "TIERED_JOBS_QUEUE_ARN"


class PublisherParameters:
    """The SSM parameters a publisher reads, one list for both sides: the names its policy grants
    ``ssm:GetParameters`` on (``cdk/publishers.py``) and those it asks for (``stage/discovery.py``, the
    scheduling target, a queued job's cancel)."""

    #: Each tier's parameters discovery reads, when the publisher is built.
    DISCOVERY_TIER_KEYS = (Ssm.TIER_QUEUE_URL, Ssm.TIER_DLQ_URL, Ssm.TIER_LARGE_PAYLOADS)
    #: Each tier's queue ARN: a one-time schedule's target, read the first time a job needs a schedule.
    SCHEDULING_TIER_KEYS = (Ssm.TIER_QUEUE_ARN,)
    #: Each tier's idempotency window: a cancel marker's, read on the first cancel of a queued job.
    CANCELLING_TIER_KEYS = (Ssm.TIER_IDEMPOTENCY_TTL,)

    @staticmethod
    def discovery(stage: str) -> list[str]:
        """The stage's own parameters discovery reads in its first call: its tiers, routes and tables."""
        return [
            Ssm.tiers(stage),
            Ssm.routes(stage),
            Ssm.replay_function_name(stage),
            Ssm.idempotency_table_name(stage),
            Ssm.unique_table_name(stage),
            Ssm.batch_table_name(stage),
        ]

    @staticmethod
    def scheduling(stage: str) -> list[str]:
        """The schedule group's parameters, read with the tiers' queue ARNs for a job's first schedule."""
        return [
            Schedules.ssm(stage, key)
            for key in (Schedules.SSM_GROUP_NAME, Schedules.SSM_ROLE_ARN, Schedules.SSM_DLQ_ARN)
        ]

    @staticmethod
    def optional(stage: str) -> list[str]:
        """Those a publisher asks for that a stage writes only with a setting (an absent name is no error): the
        stage key its one-time schedules are encrypted with (``encryption``), asked with the schedule group's."""
        return [Schedules.ssm(stage, Schedules.SSM_KMS_KEY_ARN)]

    @staticmethod
    def of_tiers(stage: str, tiers: Sequence[str], keys: Sequence[str]) -> list[str]:
        """Each tier's parameter of each of ``keys`` (``*_TIER_KEYS``), tier by tier."""
        return [Ssm.tier(stage, tier, key) for tier in tiers for key in keys]

    @classmethod
    def every(cls, stage: str, tiers: Sequence[str]) -> list[str]:
        """Every parameter a publisher may read: its policy grants ``ssm:GetParameters`` on these, no other."""
        return [
            *cls.discovery(stage),
            *cls.of_tiers(stage, tiers, cls.DISCOVERY_TIER_KEYS),
            *cls.scheduling(stage),
            *cls.of_tiers(stage, tiers, cls.SCHEDULING_TIER_KEYS),
            *cls.of_tiers(stage, tiers, cls.CANCELLING_TIER_KEYS),
        ]

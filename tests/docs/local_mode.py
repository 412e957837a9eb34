"""One local deployment for the whole docs test, and how each kind of block runs against it.

:class:`LocalMode` starts local mode as docs/local.md tells a reader to (``.venv/bin/python -m
emulator up``; here on a free port, without the live view) from a *checkout*: a temporary folder
whose entries link to this repository's, so ``.venv/bin/...``, ``events/`` and ``functions/``
resolve as in a clone while what the examples write (discard archives, ``out.json``,
``cdk.out.local``) lands there, never in the repository. Every command gets the environment ``up``
prints for another terminal, with the virtualenv's ``bin`` first on ``PATH`` and this checkout on
``PYTHONPATH``. The blocks of a page run in order against it, so a page's later examples see what
its earlier ones did; :data:`STATES` set up what a page assumes the reader did before.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from emulator import synth_cache
from tests.docs.blocks import CONSOLE, PYTHON, ROOT, SHELL, Block, output_problems, prompts
from tiered_jobs.contract.manifest import StageManifest

#: A ``background`` command has this long to print its first line (or to fail), then must still
#: be running :data:`ALIVE_SECONDS` later.
FIRST_OUTPUT_SECONDS = 2
ALIVE_SECONDS = 0.5
START_TIMEOUT_SECONDS = 180
COMMAND_TIMEOUT_SECONDS = 120
#: How long :meth:`settle` waits for the tier queues to empty: far above an honest run on a loaded machine.
SETTLE_TIMEOUT_SECONDS = 300.0
#: ``up`` prints this once everything (the console included) is up.
READY_LINE = "Press Ctrl-C to stop"
VENV_BIN = ROOT / ".venv" / "bin"
#: A proxy nobody listens on (port 9: discard).
NOWHERE = "http://127.0.0.1:9"
#: Lines of output shown with a failure.
TAIL_LINES = 30

#: Prepended to a shell block (one line, so the block's lines keep their numbers): stop at the first
#: failure and say its line; ``_docs_background`` runs a command that runs until stopped.
SHELL_PRELUDE = " ".join(
    [
        "set -eo pipefail; trap 'echo \"docs-test: line $LINENO: exit $?\" >&2' ERR;",
        '_docs_background() { local log; log=$(mktemp); setsid bash -c "$1" >"$log" 2>&1 & local pid=$! rc=0 tick=0;',
        f'while [ ! -s "$log" ] && [ $tick -lt {FIRST_OUTPUT_SECONDS * 10} ] && kill -0 $pid 2>/dev/null;',
        f"do sleep 0.1; tick=$((tick + 1)); done; sleep {ALIVE_SECONDS};",
        "if kill -0 $pid 2>/dev/null; then kill -TERM -- -$pid 2>/dev/null || kill -TERM $pid; wait $pid || true;",
        'cat "$log"; rm -f "$log";',
        'else wait $pid || rc=$?; cat "$log"; rm -f "$log";',
        'echo "docs-test: stopped by itself (exit $rc) instead of running until stopped: $1" >&2; return 1; fi; }',
    ]
)
_FAILED_LINE = re.compile(r"docs-test: line (\d+): exit (\d+)")
_PYTHON_LINE = re.compile(r'File "<stdin>", line (\d+)')


@dataclass
class Given:
    """What a state adds to a block's run: variables (``None``: unset), and Python run before it."""

    env: dict[str, str | None] = field(default_factory=dict)
    prelude: str = ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def link_checkout(target: Path) -> Path:
    """A folder that looks like a clone with ``make setup`` done: a link to each tracked top-level
    entry of the repository, and to ``.venv`` and ``node_modules``."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    names = {line.split("/", 1)[0] for line in listed.splitlines()} | {".venv", "node_modules"}
    target.mkdir(parents=True, exist_ok=True)
    for name in sorted(names):
        if (ROOT / name).exists():
            (target / name).symlink_to(ROOT / name)
    return target


def base_environment() -> dict[str, str]:
    """This process's environment without its AWS and Tiered Jobs settings (``up`` says which to use),
    the virtualenv first on ``PATH`` and this checkout's code first on ``PYTHONPATH``."""
    dropped = ("AWS_", "TIERED_JOBS_", "PYTEST_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(dropped)}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    # A documented `tiered-jobs console` listens on a free port, never the documented 8321: a
    # developer's own console (or `make up`) may hold it while the suite runs.
    env["TIERED_JOBS_CONSOLE_PORT"] = str(free_port())
    # The run's synthesis cache (tests/conftest.py) reaches `up` too: its synthesis is the suite's.
    if synth_cache.CACHE_ENV in os.environ:
        env[synth_cache.CACHE_ENV] = os.environ[synth_cache.CACHE_ENV]
    # Nothing leaves 127.0.0.1: a request to anywhere else goes to a proxy that is not there, and fails.
    env.update({"HTTP_PROXY": NOWHERE, "HTTPS_PROXY": NOWHERE, "NO_PROXY": "127.0.0.1,localhost"})
    return env


def exported(lines: list[str]) -> dict[str, str | None]:
    """The ``export NAME=value`` / ``unset NAME`` lines among ``lines``."""
    found: dict[str, str | None] = {}
    for line in (line.strip() for line in lines):
        if line.startswith("export ") and "=" in line:
            name, value = line[len("export ") :].split("=", 1)
            found[name] = shlex.split(value)[0] if value.strip() else value  # as the shell reads it
        elif line.startswith("unset "):
            found[line.split()[1]] = None
    return found


def _apply(env: dict[str, str], changes: dict[str, str | None]) -> dict[str, str]:
    result = dict(env)
    for name, value in changes.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = value
    return result


def _tail(text: str) -> str:
    return "\n".join("    | " + line for line in text.rstrip().splitlines()[-TAIL_LINES:])


class LocalMode:
    """``python -m emulator up`` in a subprocess, its environment, and the blocks run against it."""

    def __init__(self, home: Path):
        self.home = home
        self.checkout = home / "checkout"
        self.log = home / "up.log"
        self.tmp = home / "tmp"
        self.port = 0
        self.command: list[str] = []
        self.process: subprocess.Popen[bytes] | None = None
        #: What ``up`` printed up to :data:`READY_LINE`.
        self.printed: list[str] = []
        #: The environment of every command: what ``up`` printed for another terminal.
        self.env: dict[str, str] = {}
        #: Variables states exported for the blocks after them (``$LETTER_ID``).
        self.variables: dict[str, str] = {}
        #: Idempotency keys of the letters states put in DLQs (any other letter is an example's failure).
        self.seeded_keys: set[str] = set()
        #: Letters of examples a state removed to set up its own.
        self.removed: list[dict[str, Any]] = []
        self.timings: list[tuple[str, float]] = []
        self._clients: dict[str, Any] = {}

    # -- the session ------------------------------------------------------------------------------

    def start(self) -> LocalMode:
        link_checkout(self.checkout)
        self.tmp.mkdir()
        self.port = free_port()
        self.command = [".venv/bin/python", "-m", "emulator", "up", "--port", str(self.port), "--no-view"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=self.checkout,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**base_environment(), "COLUMNS": "200"},
            )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while READY_LINE not in (text := self.log.read_text(encoding="utf-8", errors="replace")):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"local mode did not start ({' '.join(self.command)}):\n{_tail(text)}")
            time.sleep(0.2)
        self.printed = text.splitlines()
        self.env = _apply(base_environment(), exported(self.printed))
        return self

    @property
    def stage(self) -> str:
        return self.env["TIERED_JOBS_STAGE"]

    def stop(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def clients(self, service: str) -> Any:
        """A boto3 client on the embedded AWS (the harness's own look-ups and set-ups)."""
        if service not in self._clients:
            import boto3

            self._clients[service] = boto3.session.Session().client(
                service,
                endpoint_url=self.env["AWS_ENDPOINT_URL"],
                region_name=self.env["AWS_REGION"],
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
        return self._clients[service]

    # -- running blocks ---------------------------------------------------------------------------

    def run(self, block: Block) -> list[str]:
        """Run ``block`` as written (with its directives); return its problems, each naming its line."""
        started = time.monotonic()
        given = Given()
        for name in block.givens:
            try:
                state = STATES[name](self)
            except Exception as exc:  # noqa: BLE001 - reported with the block, like the block's own failures
                return [f"{block.where}: could not set up {name!r}: {exc!r}"]
            given = Given({**given.env, **state.env}, given.prelude + state.prelude)
        env = _apply({**self.env, **self.variables, "TMPDIR": str(self.tmp)}, given.env)
        try:
            if block.is_session:
                return self._session(block)
            if block.language in SHELL:
                return self._shell(block, env)
            if block.language == CONSOLE:
                return self._console(block, env)
            if block.language == PYTHON:
                return self._python(block, env, given)
            return [f"{block.where}: no way to run a {block.language!r} block"]
        finally:
            self.timings.append((block.where, time.monotonic() - started))

    def _process(
        self, args: list[str], env: dict[str, str], stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                args,
                cwd=self.checkout,
                env=env,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired as exc:
            output = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return subprocess.CompletedProcess(args, -1, output, f"timed out after {COMMAND_TIMEOUT_SECONDS} s")

    def _shell(self, block: Block, env: dict[str, str]) -> list[str]:
        lines = block.runnable.splitlines()
        script: list[str] = []
        index = 0
        while index < len(lines):  # one logical command: lines joined by a trailing backslash
            end = index
            while lines[end].endswith("\\") and end + 1 < len(lines):
                end += 1
            command = " ".join(line.rstrip("\\").strip() for line in lines[index : end + 1])
            if any(text in command for text in block.backgrounds):
                script += [f"_docs_background {shlex.quote(command)}"] + [""] * (end - index)
            else:
                script += lines[index : end + 1]
            index = end + 1
        result = self._process(["bash", "-c", "\n".join([SHELL_PRELUDE, *script])], env)
        if result.returncode == 0:
            return []
        failed = _FAILED_LINE.search(result.stderr)
        line = block.line + int(failed.group(1)) - 1 if failed else block.line
        shown = lines[line - block.line - 1].strip() if 0 < line - block.line <= len(lines) else ""
        return [f"{block.page}:{line}: exit {result.returncode}: {shown}\n{_tail(result.stdout + result.stderr)}"]

    def _console(self, block: Block, env: dict[str, str]) -> list[str]:
        problems: list[str] = []
        found = prompts(block)
        if not found:
            return [
                f"{block.where}: a console block without a `$ ` prompt (an output sample is a block without a language)"
            ]
        for prompt in found:
            result = self._process(["bash", "-c", prompt.command], env)
            output = result.stdout + result.stderr
            wrong = []
            if prompt.expects_failure != (result.returncode != 0):
                wrong.append(f"exit {result.returncode}, expected {'non-zero' if prompt.expects_failure else '0'}")
            wrong += output_problems(prompt.shown, output)
            if wrong:
                problems.append(
                    f"{block.page}:{prompt.line}: $ {prompt.command}\n  " + "\n  ".join(wrong) + f"\n{_tail(output)}"
                )
        return problems

    def _python(self, block: Block, env: dict[str, str], given: Given) -> list[str]:
        code = given.prelude + block.runnable
        result = self._process([str(VENV_BIN / "python"), "-"], env, stdin=code)
        if result.returncode == 0:
            return []
        lines = _PYTHON_LINE.findall(result.stderr)
        offset = int(lines[-1]) - given.prelude.count("\n") if lines else 0
        line = block.line + offset if 0 < offset <= block.runnable.count("\n") else block.line
        return [f"{block.page}:{line}: python exited {result.returncode}\n{_tail(result.stdout + result.stderr)}"]

    def _session(self, block: Block) -> list[str]:
        """The block that starts local mode: its command is how this session started (but for the
        port and the live view), and every other line is one the session printed."""
        command, *shown = [
            line for line in (line.split("#", 1)[0].strip() for line in block.runnable.splitlines()) if line
        ]
        any_port = lambda text: re.sub(r"--port \d+", "--port N", text)  # noqa: E731
        ours = " ".join(self.command).replace(" --no-view", "")
        problems = (
            []
            if any_port(command) == any_port(ours)
            else [f"{block.where}: the page starts local mode with {command!r}, the docs test with {ours!r}"]
        )
        port = re.search(r"--port (\d+)", command)
        printed = {line.strip() for line in self.printed}
        for line in shown:
            if (line.replace(f":{port.group(1)}", f":{self.port}") if port else line) not in printed:
                problems.append(f"{block.where}: local mode did not print {line!r}")
        return problems

    # -- what the harness reads -------------------------------------------------------------------

    def deployment(self) -> Any:
        from tiered_jobs.stage import discovery

        return discovery.from_ssm(self.stage, ssm=self.clients("ssm"))

    def settle(self, timeout: float = SETTLE_TIMEOUT_SECONDS) -> None:
        """Wait until no tier queue has a message waiting or in flight (delayed ones may stay); the bound
        only stops a hang (a loaded machine's cold start may pass the local timeout: the batch comes back)."""
        sqs = self.clients("sqs")
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        deadline = time.monotonic() + timeout
        for tier in self.deployment().tiers.values():
            while counts := {
                name: int(value)
                for name, value in sqs.get_queue_attributes(QueueUrl=tier.queue_url, AttributeNames=names)[
                    "Attributes"
                ].items()
                if int(value)
            }:
                if time.monotonic() > deadline:
                    raise AssertionError(f"waited {timeout:g} s for {tier.queue_url} to settle, saw {counts}")
                time.sleep(0.3)

    def letters(self, dlq_url: str, *, delete: bool = False) -> list[dict[str, Any]]:
        """Every letter in the DLQ at ``dlq_url``: read, then visible again (or deleted)."""
        sqs = self.clients("sqs")
        found: list[dict[str, Any]] = []
        while batch := sqs.receive_message(
            QueueUrl=dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=60, MessageAttributeNames=["All"]
        ).get("Messages", []):
            found += batch
        for message in found:
            if delete:
                sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"])
            else:
                sqs.change_message_visibility(
                    QueueUrl=dlq_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
                )
        return found

    def unexpected(self, letters: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ``letters`` no state put there: jobs of examples that failed."""
        return [
            letter for letter in letters if json.loads(letter["Body"]).get("idempotency_key") not in self.seeded_keys
        ]


# -- states: what a page assumes the reader has done before an example ------------------------------


def _send_letter(
    mode: LocalMode,
    job_type: str,
    payload: dict[str, Any],
    key: str,
    error_type: str,
    message: str,
    reason: str,
    attempts: int,
) -> str:
    """Put one letter in the critical DLQ as the consumer dead-letters a job (body and reasons)."""
    from tiered_jobs.contract.envelope import build
    from tiered_jobs.runtime.deadletter import DeadLetterReason

    critical, sqs = mode.deployment().tier("critical"), mode.clients("sqs")
    arn = sqs.get_queue_attributes(QueueUrl=critical.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    now = datetime.now(timezone.utc)
    reasons = DeadLetterReason(reason, error_type, message, attempts, now - timedelta(minutes=13), now, arn, job_type)
    mode.seeded_keys.add(key)
    return str(
        sqs.send_message(
            QueueUrl=critical.dlq_url,
            MessageBody=build(job_type, payload, key).to_json(),
            MessageAttributes={
                name: {"DataType": "String", "StringValue": value} for name, value in reasons.attributes().items()
            },
        )["MessageId"]
    )


def letters(mode: LocalMode) -> Given:
    """The critical DLQ holds what the CLI pages show after an incident: two payments for accounts
    that do not exist, one the bank timed out on, and a letter that will never succeed
    (``$LETTER_ID``; ``replay --job-type 'payments.*'`` leaves it)."""
    mode.removed += mode.unexpected(mode.letters(mode.deployment().tier("critical").dlq_url, delete=True))
    for number, amount in ((404, 500), (405, 700)):
        _send_letter(
            mode,
            "payments.update_balance",
            {"account_id": f"acc_{number}", "amount": amount},
            f"pay_{number}",
            "AccountNotFound",
            f"account {number} not found",
            "permanent",
            1,
        )
    _send_letter(
        mode,
        "payments.update_balance",
        {"account_id": "acc_7", "amount": 250},
        "pay_7",
        "TimeoutError",
        "bank API timed out after 10 s",
        "retries_exhausted",
        4,
    )
    mode.variables["LETTER_ID"] = _send_letter(
        mode,
        "demo.flaky",
        {"fail_times": 99, "error": "permanent"},
        "flaky-never",
        "PermanentError",
        "demo.flaky: permanent failure on attempt 1",
        "permanent",
        1,
    )
    return Given()


def settled(mode: LocalMode) -> Given:
    """The jobs published before have run (no tier queue has a message waiting or in flight)."""
    mode.settle()
    return Given()


def no_credentials(mode: LocalMode) -> Given:
    """No AWS credentials anywhere: none in the environment, no files, no instance metadata."""
    nowhere = str(mode.home / "no-such-file")
    return Given(
        env={
            "AWS_ACCESS_KEY_ID": None,
            "AWS_SECRET_ACCESS_KEY": None,
            "AWS_SESSION_TOKEN": None,
            "AWS_PROFILE": None,
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
            "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
            "AWS_WEB_IDENTITY_TOKEN_FILE": None,
            "AWS_SHARED_CREDENTIALS_FILE": nowhere,
            "AWS_CONFIG_FILE": nowhere,
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )


def service_role(mode: LocalMode) -> Given:
    """The role a publishing service runs as (``my-service-role``) exists."""
    iam = mode.clients("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "ecs-tasks.amazonaws.com"}}
        ],
    }
    if not any(role["RoleName"] == "my-service-role" for role in iam.list_roles()["Roles"]):
        iam.create_role(RoleName="my-service-role", AssumeRolePolicyDocument=json.dumps(trust))
    return Given()


def archived(mode: LocalMode) -> Given:
    """The replay function discarded a letter of the critical DLQ into the stage's archive bucket;
    ``$ARCHIVE_OBJECT`` is the object's name."""
    from tiered_jobs.contract.names import Ssm, discard_archive_prefix, function_name

    letter = _send_letter(
        mode,
        "payments.update_balance",
        {"account_id": "acc_closed", "amount": 100},
        "pay_closed",
        "AccountClosed",
        "account acc_closed is closed",
        "permanent",
        1,
    )
    event = {"action": "discard", "tier": "critical", "message_ids": [letter]}
    answer = mode.clients("lambda").invoke(FunctionName=function_name(mode.stage, "replay"), Payload=json.dumps(event))
    response = json.loads(answer["Payload"].read())
    assert response.get("discarded") == 1, response
    bucket = mode.clients("ssm").get_parameter(Name=Ssm.discard_archive_bucket(mode.stage))["Parameter"]["Value"]
    prefix = discard_archive_prefix(mode.stage, "critical")
    objects = mode.clients("s3").list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]
    newest = max(objects, key=lambda item: item["LastModified"])["Key"]
    mode.variables["ARCHIVE_OBJECT"] = newest[len(prefix) :]
    return Given()


#: The objects of a service the publishing examples use without defining them.
SERVICE_OBJECTS = """\
import logging, os
from contextlib import contextmanager
from dataclasses import dataclass
from tiered_jobs.publisher import Publisher

log = logging.getLogger("my-service")
pages = ["home", "pricing", "docs"]
publisher = Publisher.from_stage(os.environ["TIERED_JOBS_STAGE"])


@dataclass
class Order:
    id: int
    email: str


class Database:
    @contextmanager
    def transaction(self):
        yield


db = Database()


def create_order(*args):
    return Order(42, "buyer@example.com")
"""


def service_objects(mode: LocalMode) -> Given:
    """A service's own objects: ``log``, ``pages``, ``publisher`` (of this stage), ``db`` and ``create_order``."""
    return Given(prelude=SERVICE_OBJECTS)


def cdk_stack(mode: LocalMode) -> Given:
    """Inside the reader's CDK stack: ``self`` is a ``Stack`` and ``service_role`` its service's role
    (constructs check their arguments as they are created; synthesis would add seconds, not checks)."""
    return Given(
        prelude=(
            "import aws_cdk as cdk\nfrom aws_cdk import aws_iam\n\napp = cdk.App()\n"
            "self = cdk.Stack(app, 'MyService')\nservice_role = aws_iam.Role(self, 'ServiceRole', "
            "assumed_by=aws_iam.ServicePrincipal('ecs-tasks.amazonaws.com'))\n"
        )
    )


def stage_manifest(mode: LocalMode) -> Given:
    """``stage-manifest.json`` in the block's folder, as the stack's ``StageManifest`` output holds it for publishers
    in other accounts: this stage's queues and routes (local mode's app names no such publishers, so its stack
    has no such output; the document is the same ``StageManifest`` the construct writes)."""
    deployment = mode.deployment()
    manifest = StageManifest(
        stage=mode.stage,
        queues={name: queues.queue_url for name, queues in deployment.tiers.items()},
        routes=deployment.routes.table,
    )
    text = json.dumps(manifest.to_dict())
    return Given(prelude=f"import pathlib\npathlib.Path('stage-manifest.json').write_text({text!r})\n")


STATES: dict[str, Callable[[LocalMode], Given]] = {
    "stage-manifest": stage_manifest,
    "letters": letters,
    "settled": settled,
    "no-credentials": no_credentials,
    "service-role": service_role,
    "archived": archived,
    "service-objects": service_objects,
    "cdk-stack": cdk_stack,
}

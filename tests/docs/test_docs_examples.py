"""Every command and code example of the README and docs/ runs as written against local mode.

The blocks and the directives that may sit above them: :mod:`tests.docs.blocks`; the local session
and the states pages assume: :mod:`tests.docs.local_mode`. A page that drifts (a renamed flag, a job
type that does not exist, output that changed) fails here, naming the file, the line and the error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.docs.blocks import (
    CONSOLE,
    DELIBERATE_ERRORS,
    JSON,
    LANGUAGES,
    ROOT,
    SHELL,
    YAML,
    Block,
    Directive,
    blocks,
    directive_problems,
    merged,
    name_of,
    output_problems,
    pages,
    parse_json,
    prompts,
    published_job_types,
    stray_directives,
)
from tests.docs.local_mode import STATES, LocalMode

ALL_BLOCKS = [block for page in pages() for block in blocks(page)]
#: A skip is for what cannot run here at all (a real AWS account, the suite itself, an install into a reader's
#: own service); keep it so. 19: the TypeScript publisher's install into a Node service joined the Python
#: wheel's (its own npm test builds, installs and tests the package).
MAX_SKIPS = 19
RUNS_ON_LOCAL_MODE = {"background", "given", "replace", "session"}


def settings_model() -> Any:
    """The model ``cdk.json``'s ``tiered_jobs`` object is validated with (the one place that names it)."""
    from tiered_jobs.cdk.settings import AppSettings

    return AppSettings


def cdk_settings() -> dict[str, Any]:
    """This repository's ``tiered_jobs`` settings, as ``cdk.json`` holds them."""
    return dict(json.loads((ROOT / "cdk.json").read_text(encoding="utf-8"))["context"]["tiered_jobs"])


def runnable(page: Path) -> list[Block]:
    return [
        b
        for b in blocks(page)
        if b.is_code and b.skip_reason is None and b.app_file is None and b.language not in (JSON, YAML)
    ]


# -- every block is run, or says why not -----------------------------------------------------------


def test_every_code_block_runs_or_says_why_not():
    problems = []
    for page in pages():
        problems += [
            f"{name_of(page)}:{line}: a docs-test comment that is not right above a fence"
            for line in stray_directives(page)
        ]
    for block in ALL_BLOCKS:
        if block.language not in LANGUAGES:
            problems.append(f"{block.where}: unknown language {block.language!r}; known: {sorted(LANGUAGES)}")
        for directive in block.directives:
            problems += [f"{block.page}:{directive.line}: {p}" for p in directive_problems(directive)]
            if not block.is_code:
                problems.append(f"{block.page}:{directive.line}: a directive on a text block")
            elif directive.kind in RUNS_ON_LOCAL_MODE and block.skip_reason is not None:
                problems.append(f"{block.page}:{directive.line}: {directive.kind!r} on a skipped block")
        if block.language == CONSOLE and not prompts(block):
            problems.append(f"{block.where}: a console block without a `$ ` prompt (an output sample has no language)")
        problems += [
            f"{block.where}: unknown state {name!r}; known: {sorted(STATES)}"
            for name in block.givens
            if name not in STATES
        ]
        problems += [
            f"{block.where}: 'replace {old} => ...' but the block has no {old!r}"
            for old, _ in block.replacements
            if old not in block.text
        ]
        problems += [
            f"{block.where}: 'background: {text}' but no command of the block has it"
            for text in block.backgrounds
            if text not in block.runnable
        ]
    assert problems == [], "\n".join(problems)


def test_skips_are_few_and_each_says_why():
    skipped = [block for block in ALL_BLOCKS if block.is_code and block.skip_reason is not None]
    print("\nblocks the docs test does not run:")
    for block in skipped:
        print(f"  {block.where} ({block.language}): {block.skip_reason}")
    assert all(len(block.skip_reason or "") >= 15 for block in skipped), "a skip reason says why"
    assert len(skipped) <= MAX_SKIPS, f"{len(skipped)} skipped blocks; run them against local mode instead"
    assert len([b for b in ALL_BLOCKS if b.is_code]) > 3 * len(skipped)


# -- json blocks --------------------------------------------------------------------------------------


def json_problems(block: Block) -> list[str]:
    """Parse a json block and check it as what it is: a ``cdk.json`` snippet (the settings model), an
    envelope (the contract), a payload schema (the contract's validator), or a replay event."""
    from tiered_jobs.contract import envelope, payloads, schedules
    from tiered_jobs.replay import ReplayEventError, parse_event
    from tiered_jobs.replay.breaker import PAGE_SOURCE, closed_page
    from tiered_jobs.replay.pause import PAUSE_ACTIONS, PAUSE_EVENT_FIELDS

    try:
        value = parse_json(block.runnable)
    except ValueError as exc:
        return [f"{block.where}: not JSON: {exc}"]
    model = settings_model()
    fields = {f for f in model.__dataclass_fields__}
    if isinstance(value, dict) and value and set(value) <= fields:
        try:
            model.from_context(merged(cdk_settings(), value))
        except ValueError as exc:
            return [f"{block.where}: the settings model refuses this cdk.json snippet: {exc}"]
    elif isinstance(value, dict) and "idempotency_key" in value:
        key = str(value["idempotency_key"])
        if key.startswith(schedules.PERIODIC_KEY_PREFIX):  # a periodic schedule's input, before Scheduler fills it
            name = key[len(schedules.PERIODIC_KEY_PREFIX) :].split(":", 1)[0]
            expected = schedules.periodic_envelope(name, value["type"], value["payload"])
            return [] if value == expected else [f"{block.where}: a periodic schedule sends {expected}"]
        problems = envelope.validate(value) + payloads.problems(value.get("type"), value.get("payload"))
        return [f"{block.where}: not a valid envelope: {problem}" for problem in problems]
    elif isinstance(value, dict) and "$schema" in value:
        try:
            payloads._check_supported(value, block.where)
        except payloads.SchemaError as exc:
            return [f"{block.where}: {exc}"]
    elif isinstance(value, dict) and value.get("Source") == PAGE_SOURCE:  # the breaker's closing page
        expected = json.loads(closed_page(value["Stage"], value["Tier"], "", value["ClosedAt"])[1])
        fixed = {k: v for k, v in expected.items() if k != "Summary"}  # the summary names a concurrency
        if set(value) != set(expected) or {k: value[k] for k in fixed} != fixed:
            return [f"{block.where}: the circuit breaker's closing page reads {expected}"]
    elif isinstance(value, dict) and "AlarmDescription" in value:  # an alarm's page: its first command must exist
        from tests.support.commands import tiered_jobs_problems

        _, marker, command = str(value["AlarmDescription"]).rpartition("First run: ")
        if not marker:
            return [f"{block.where}: an alarm's description ends with 'First run: tiered-jobs ...' (cdk/alarms.py)"]
        return [f"{block.where}: {problem}" for problem in tiered_jobs_problems(command)]
    elif isinstance(value, dict) and value.get("action") in PAUSE_ACTIONS:
        unknown = sorted(set(value) - set(PAUSE_EVENT_FIELDS))
        return [f"{block.where}: a {value['action']} event has no field(s) {unknown}"] if unknown else []
    elif isinstance(value, dict) and "tier" in value:
        try:
            parse_event(value)
        except ReplayEventError as exc:
            return [f"{block.where}: {exc}"]
    return []


def test_the_library_apps_files_are_the_ones_its_test_runs():
    """Each ``app-file`` block is written into the app ``tests/library/test_outside_app.py`` builds."""
    from tests.support import outside_app

    documented = {block.app_file: block.where for block in ALL_BLOCKS if block.app_file is not None}
    assert set(documented) == set(outside_app.DOC_FILES) and documented


def test_json_blocks_parse_and_hold_what_they_say():
    checked = [block for block in ALL_BLOCKS if block.language == JSON]
    assert checked
    problems = [problem for block in checked for problem in json_problems(block)]
    assert problems == [], "\n".join(problems)


def test_an_alarm_page_whose_first_command_the_cli_lacks_is_caught():
    page = '{"AlarmName": "a", "AlarmDescription": "Letters. First run: tiered-jobs --stage prod dlq peek critical"}'
    (problem,) = json_problems(Block("docs/x.md", 1, JSON, page))
    assert "docs/x.md:1" in problem and "peek" in problem


def test_a_wrong_cdk_json_snippet_is_caught():
    snippet = Block("docs/x.md", 1, JSON, '"tiers": {"bulk": {"max_attempts": 0}}\n')
    (problem,) = json_problems(snippet)
    assert "docs/x.md:1" in problem and "max_attempts" in problem


# -- job types and replay events the examples send ----------------------------------------------------


def test_the_examples_publish_and_schedule_registered_job_types():
    """A type the consumer does not know publishes fine, then dead-letters: every type an example
    publishes (run or not) or schedules is registered. (The library app's files publish its own
    types: its test runs them against its own jobs.)"""
    import functions.jobs  # noqa: F401 - registers every example job
    from tiered_jobs.contract import payloads
    from tiered_jobs.runtime.registry import registry

    code = [block for block in ALL_BLOCKS if block.is_code and block.language != JSON and block.app_file is None]
    published = {t: b.where for b in code for t in published_job_types(b.runnable)}
    scheduled: dict[str, str] = {}
    bad_payloads: list[str] = []
    for block in ALL_BLOCKS:
        if block.language == JSON:
            value = parse_json(block.runnable)
            for schedule in (value.get("schedules", {}) if isinstance(value, dict) else {}).values():
                scheduled[schedule["job_type"]] = block.where
                bad_payloads += [
                    f"{block.where}: {p}" for p in payloads.problems(schedule["job_type"], schedule.get("payload", {}))
                ]
    assert {"payments.update_balance", "notifications.send_email"} <= set(published), "the patterns drifted"
    unknown = {
        t: where
        for t, where in {**published, **scheduled}.items()
        if t not in registry.types() and t not in DELIBERATE_ERRORS
    }
    assert unknown == {}
    assert bad_payloads == []


def workflow_problems(block: Block) -> list[str]:
    """A workflow's steps: every ``run:`` line that calls ``tiered-jobs``, the CDK CLI or ``make`` names a
    command, options and values the tool has (``tests.support.commands``; ``make``: the Makefile's targets)."""
    import yaml

    from tests.support.commands import cdk_problems, tiered_jobs_problems

    try:
        workflow = yaml.safe_load(block.runnable)
    except yaml.YAMLError as exc:
        return [f"{block.where}: not YAML: {exc}"]
    targets = set(re.findall(r"(?m)^([\w.-]+):", (ROOT / "Makefile").read_text(encoding="utf-8")))
    problems: list[str] = []
    runs = [
        line.strip()
        for job in (workflow.get("jobs") or {}).values()
        for step in job.get("steps", [])
        for line in str(step.get("run", "")).splitlines()
        if line.strip()
    ]
    for line in runs:
        tool = line.split()[0]
        if tool.endswith("tiered-jobs"):
            problems += tiered_jobs_problems(line)
        elif line.startswith("npx cdk "):
            problems += cdk_problems(line)
        elif tool == "make":
            problems += [f"the Makefile has no target {t!r}" for t in line.split()[1:] if t not in targets]
        else:
            problems.append(f"{line!r}: a step this check does not know; add its tool here")
    if not runs:
        problems.append("no run: step")
    return [f"{block.where}: {problem}" for problem in problems]


def test_workflows_parse_and_their_steps_run_commands_the_tools_have():
    checked = [block for block in ALL_BLOCKS if block.language == YAML]
    assert checked
    problems = [problem for block in checked for problem in workflow_problems(block)]
    assert problems == [], "\n".join(problems)


def test_a_workflow_step_the_tools_do_not_have_is_caught():
    steps = "jobs:\n  deploy:\n    steps:\n      - run: npx cdk deploy --require-approval sometimes\n"
    steps += "      - run: tiered-jobs --stage prod smoke --tiers bulk\n      - run: make set-up\n"
    problems = workflow_problems(Block("docs/x.md", 1, YAML, steps))
    assert len(problems) == 3 and all(p.startswith("docs/x.md:1") for p in problems), problems


_INVOKE = re.compile(r"aws lambda invoke\b(?:[^\n]|\\\n)*?--payload (?:file|fileb)://(\S+)")


def test_the_aws_cli_sends_valid_replay_events():
    """``aws lambda invoke --payload file://...`` forms (run or not: AWS CLI v2 is not on PyPI) send a
    file the replay function's own event parser accepts."""
    from tiered_jobs.replay import parse_event

    sent = [
        (block.where, path) for block in ALL_BLOCKS if block.language in SHELL for path in _INVOKE.findall(block.text)
    ]
    assert len(sent) >= 3, sent
    problems = []
    for where, path in sent:
        try:
            parse_event(parse_json((ROOT / path).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:  # a missing file, not JSON, or ReplayEventError
            problems.append(f"{where}: {path}: {exc}")
    assert problems == []


# -- the harness notices drift --------------------------------------------------------------------------


def test_shown_output_is_compared_with_values_left_free():
    shown = (
        "Published payments.update_balance (key 'pay_123') to tier critical: message "
        "56fcbced-54b5-43ae-863e-ffcd48efdf91",
    )
    actual = (
        "Published payments.update_balance (key 'pay_123') to tier critical: message \n"
        "45177453-f877-4a5e-8bbb-3e315468560a\n"
    )
    assert output_problems(shown, actual) == []
    assert output_problems(shown, actual.replace("tier critical", "tier bulk")) != []
    table = ("┃ Tier ┃ Visible ┃ DLQ ┃",)
    assert output_problems(table, "┃ Tier    ┃ Visible ┃ DLQ ┃\n│ bulk │ 1 │ 0 │") == []
    assert output_problems(table, "┃ Tier    ┃ Waiting ┃ DLQ ┃") != []


def test_console_prompts_and_what_they_show():
    block = Block(
        "docs/x.md",
        10,
        "console",
        "$ tiered-jobs dlq inspect urgent\nerror: unknown tier 'urgent'\n$ tiered-jobs status\n",
        (Directive("given", "settled", 9),),
    )
    first, second = prompts(block)
    assert (first.line, first.command, first.expects_failure) == (11, "tiered-jobs dlq inspect urgent", True)
    assert (second.line, second.shown, second.expects_failure) == (13, (), False)


# -- the examples, run --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_mode(tmp_path_factory):
    mode = LocalMode(tmp_path_factory.mktemp("docs-local-mode")).start()
    yield mode
    mode.stop()
    print("\nseconds per block:", ", ".join(f"{where} {seconds:.1f}" for where, seconds in mode.timings))


@pytest.mark.e2e
@pytest.mark.parametrize("page", [page for page in pages() if runnable(page)], ids=name_of)
def test_the_examples_of_a_page_run_as_written(page, local_mode):
    problems = [problem for block in runnable(page) for problem in local_mode.run(block)]
    assert problems == [], "\n\n".join(problems)


@pytest.mark.e2e
def test_no_example_left_a_job_in_a_dlq(local_mode):
    """Every job an example published ran: after them, the DLQs hold only the letters states put there."""
    local_mode.settle()
    left = [letter for tier in local_mode.deployment().tiers.values() for letter in local_mode.letters(tier.dlq_url)]
    bodies = [letter["Body"] for letter in local_mode.removed + local_mode.unexpected(left)]
    assert bodies == []

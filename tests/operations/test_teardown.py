"""Finding a deleted stage's leftovers (``tiered_jobs/operations/teardown.py``) where AWS refuses a look:
the operation itself, without the CLI (``tests/cli/test_teardown.py`` runs the command)."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber

from tiered_jobs.contract.names import alarm_key_description
from tiered_jobs.operations.teardown import find_leftovers


def _denied(operation: str) -> dict:
    return {
        "method": operation,
        "service_error_code": "AccessDeniedException",
        "service_message": "User is not authorized to perform kms:DescribeKey on this resource",
        "http_status_code": 400,
    }


def test_a_key_it_may_not_look_at_is_skipped_not_fatal(aws):
    """Other teams' key policies often refuse ``DescribeKey`` or ``ListResourceTags``: such a key is skipped
    (AWS's answer, as botocore's Stubber gives it: KMS's ``AccessDeniedException``)."""
    kms = boto3.client("kms")
    ids = {name: name.ljust(36, "0") for name in ("theirs", "tagless", "ours")}
    stubber = Stubber(kms)
    stubber.add_response("list_keys", {"Keys": [{"KeyId": i} for i in ids.values()], "Truncated": False})
    stubber.add_client_error(**_denied("describe_key"), expected_params={"KeyId": ids["theirs"]})
    for name, description in (("tagless", "another team's key"), ("ours", alarm_key_description("dev"))):
        stubber.add_response(
            "describe_key",
            {
                "KeyMetadata": {
                    "KeyId": ids[name],
                    "KeyManager": "CUSTOMER",
                    "KeyState": "Enabled",
                    "Description": description,
                }
            },
            expected_params={"KeyId": ids[name]},
        )
        stubber.add_client_error(**_denied("list_resource_tags"), expected_params={"KeyId": ids[name]})
    with stubber:
        found = find_leftovers(lambda service: kms if service == "kms" else boto3.client(service), "dev")
        stubber.assert_no_pending_responses()
    assert [(item.kind, item.name) for item in found] == [("kms key", ids["ours"])]

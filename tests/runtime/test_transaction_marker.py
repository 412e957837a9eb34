"""``cancelled_only_by_condition``: a job's own "already applied" marker, told from every other
cancellation of its transaction (botocore's shapes of ``TransactionCanceledException``)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from tiered_jobs.runtime import cancelled_only_by_condition


def cancelled(codes: list[str] | None, message: str = "Transaction cancelled") -> ClientError:
    response: dict = {"Error": {"Code": "TransactionCanceledException", "Message": message}}
    if codes is not None:
        response["CancellationReasons"] = [{"Code": code} for code in codes]
    return ClientError(response, "TransactWriteItems")


@pytest.mark.parametrize(
    "error, already_applied",
    [
        (cancelled(["None", "ConditionalCheckFailed"]), True),
        (cancelled(["None", "TransactionConflict"]), False),  # a conflict cancels too: retry, never skip
        (cancelled(["ConditionalCheckFailed", "ConditionalCheckFailed"]), False),  # another item's condition
        (cancelled(["ThrottlingError", "ConditionalCheckFailed"]), False),
        (cancelled(["None"]), False),  # no such item
        # no CancellationReasons: the reasons DynamoDB lists at the end of its message
        (
            cancelled(None, "Transaction cancelled, please refer cancellation reasons [None, ConditionalCheckFailed]"),
            True,
        ),
        (
            cancelled(None, "Transaction cancelled, please refer cancellation reasons [None, TransactionConflict]"),
            False,
        ),
        (ClientError({"Error": {"Code": "ConditionalCheckFailedException", "Message": "x"}}, "PutItem"), False),
        (ValueError("not an AWS error"), False),
    ],
)
def test_only_the_markers_own_condition_means_already_applied(error, already_applied):
    assert cancelled_only_by_condition(error, item=1) is already_applied

"""Publishers in other accounts (``publishers`` in ``cdk.json``): the accounts whose roles may send to the tier
queues, and the AWS Organization they must belong to."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .values import SettingsError, reject_unknown

SETTINGS_KEY = "publishers"
_ACCOUNT = re.compile(r"^\d{12}$")
#: AWS Organizations' organization ID (``DescribeOrganization``'s ``Id``).
_ORGANIZATION = re.compile(r"^o-[a-z0-9]{10,32}$")
_EXAMPLE = '{"accounts": ["210987654321"], "organization_id": "o-a1b2c3d4e5"}'


@dataclass(frozen=True)
class PublisherAccounts:
    """Other accounts whose principals may publish: the queue and key policies name exactly these."""

    accounts: tuple[str, ...]
    #: When given, a principal of those accounts must also be in this organization (``aws:PrincipalOrgID``).
    organization_id: str | None = None


def build_publishers(raw: Any, where: str) -> PublisherAccounts | None:
    """``None`` when absent: only roles of the stage's own account may publish (the publisher policy)."""
    if raw is None:
        return None
    where = f"{where}: {SETTINGS_KEY}"
    if not isinstance(raw, Mapping):
        raise SettingsError(f"{where} must be an object, e.g. {_EXAMPLE}")
    reject_unknown(raw, ("accounts", "organization_id"), where)
    accounts = raw.get("accounts")
    if not isinstance(accounts, list) or not accounts:
        raise SettingsError(f"{where}: accounts must be a non-empty list of 12-digit account IDs, e.g. {_EXAMPLE}")
    for account in accounts:
        if not isinstance(account, str) or not _ACCOUNT.match(account):
            raise SettingsError(
                f"{where}: account {account!r} is not a 12-digit AWS account ID (a string: JSON numbers lose "
                f"leading zeros), e.g. {_EXAMPLE}"
            )
    organization = raw.get("organization_id")
    if organization is not None and (not isinstance(organization, str) or not _ORGANIZATION.match(organization)):
        raise SettingsError(
            f"{where}: organization_id {organization!r} is not an AWS Organizations ID ('o-' and 10 to 32 lower-case "
            f"letters or digits: aws organizations describe-organization), e.g. {_EXAMPLE}"
        )
    return PublisherAccounts(accounts=tuple(dict.fromkeys(accounts)), organization_id=organization)

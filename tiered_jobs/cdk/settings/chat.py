"""Paging into chat: ``chat`` in ``cdk.json``, the Slack channels and Microsoft Teams channels that AWS
Chatbot (Amazon Q Developer in chat applications) posts the stage's alarm pages to.

::

    "chat": {
      "slack": [{"workspace_id": "T07EA123LEP", "channel_id": "C07EZ1ABC23"}],
      "teams": [{"team_id": "<uuid>", "channel_id": "19%3a...%40thread.tacv2", "tenant_id": "<uuid>"}]
    }

The IDs are checked here, at synthesis, by their shape: a channel *name* (``#ops``) where an ID
belongs, or a Teams channel ID copied undecoded, would otherwise fail minutes into a deploy, or
worse, deploy a configuration that posts nowhere. A Teams channel ID is accepted as Teams shows it
(``19:...@thread.tacv2``) or URL-encoded, and kept encoded, as CloudFormation requires.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

from .values import SettingsError, reject_unknown

#: A Slack workspace (team) ID: ``T...``, or ``E...`` for an Enterprise Grid organization.
SLACK_WORKSPACE = re.compile(r"^[TE][0-9A-Z]{2,254}$")
#: A Slack channel ID: ``C...`` (public) or ``G...`` (private); never its ``#name``.
SLACK_CHANNEL = re.compile(r"^[CG][0-9A-Z]{2,254}$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
#: A Teams channel ID, decoded (``19:<id>@thread.tacv2``).
TEAMS_CHANNEL = re.compile(r"^19:[A-Za-z0-9_=+/.,-]+@thread\.(tacv2|skype)$")


@dataclass(frozen=True)
class SlackChannel:
    """One Slack channel that shows the stage's pages (AWS Chatbot's workspace and channel ids)."""

    workspace_id: str
    channel_id: str


@dataclass(frozen=True)
class TeamsChannel:
    """One Microsoft Teams channel that shows the stage's pages (AWS Chatbot's team, channel and tenant ids)."""

    team_id: str
    #: URL-encoded (``19%3A...%40thread.tacv2``), as ``AWS::Chatbot::MicrosoftTeamsChannelConfiguration`` takes it.
    channel_id: str
    tenant_id: str


@dataclass(frozen=True)
class ChatSettings:
    """The chat channels that show the stage's pages, as ``chat`` in the settings gives them."""

    slack: tuple[SlackChannel, ...] = ()
    teams: tuple[TeamsChannel, ...] = ()


def build_chat(raw: Any, where: str) -> ChatSettings | None:
    """``chat`` from ``cdk.json`` (``None``: no chat channel)."""
    if raw is None:
        return None
    where = f"{where}: chat"
    if not isinstance(raw, Mapping):
        raise SettingsError(
            f'{where} must be an object like {{"slack": [{{"workspace_id": "T07EA123LEP", '
            f'"channel_id": "C07EZ1ABC23"}}]}}, got {type(raw).__name__}'
        )
    reject_unknown(raw, ("slack", "teams"), where)
    slack = tuple(_slack(item, f"{where}.slack[{index}]") for index, item in enumerate(_list(raw, "slack", where)))
    teams = tuple(_teams(item, f"{where}.teams[{index}]") for index, item in enumerate(_list(raw, "teams", where)))
    if not slack and not teams:
        raise SettingsError(f"{where}: name at least one channel under 'slack' or 'teams', or remove 'chat'")
    for kind, channels in (("slack", slack), ("teams", teams)):
        if len(set(channels)) != len(channels):  # two configurations of one channel: every page posted twice
            raise SettingsError(f"{where}.{kind}: a channel is listed twice; list each channel once")
    return ChatSettings(slack, teams)


def _list(raw: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise SettingsError(f"{where}.{key} must be a list of channels, got {type(value).__name__}")
    return value


def _object(item: Any, keys: tuple[str, ...], where: str) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        raise SettingsError(f"{where} must be an object with {', '.join(keys)}, got {type(item).__name__}")
    reject_unknown(item, keys, where)
    missing = [key for key in keys if key not in item]
    if missing:
        raise SettingsError(f"{where}: missing {', '.join(missing)}")
    return item


def _slack(item: Any, where: str) -> SlackChannel:
    values = _object(item, ("workspace_id", "channel_id"), where)
    workspace, channel = values["workspace_id"], values["channel_id"]
    if not isinstance(workspace, str) or not SLACK_WORKSPACE.match(workspace):
        raise SettingsError(
            f"{where}: workspace_id {workspace!r} is not a Slack workspace ID; authorize the workspace once in the "
            f"AWS Chatbot console (Amazon Q Developer in chat applications) and copy its ID, e.g. 'T07EA123LEP'"
        )
    if not isinstance(channel, str) or not SLACK_CHANNEL.match(channel):
        raise SettingsError(
            f"{where}: channel_id {channel!r} is not a Slack channel ID; use the ID at the bottom of the channel's "
            f"details in Slack (e.g. 'C07EZ1ABC23'), not its #name"
        )
    return SlackChannel(workspace, channel)


def _teams(item: Any, where: str) -> TeamsChannel:
    values = _object(item, ("team_id", "channel_id", "tenant_id"), where)
    for key in ("team_id", "tenant_id"):
        value = values[key]
        if not isinstance(value, str) or not _UUID.match(value):
            raise SettingsError(
                f"{where}: {key} {value!r} is not a Microsoft Teams ID; copy it from the channel's link "
                f"(groupId= is the team, tenantId= the tenant), a UUID like 'a1b2c3d4-0000-4000-8000-123456789abc'"
            )
    channel = values["channel_id"]
    decoded = unquote(channel) if isinstance(channel, str) else channel
    if not isinstance(decoded, str) or not TEAMS_CHANNEL.match(decoded):
        raise SettingsError(
            f"{where}: channel_id {channel!r} is not a Microsoft Teams channel ID; copy it from the channel's link, "
            f"the part after /channel/: '19:...@thread.tacv2' (or URL-encoded, '19%3a...%40thread.tacv2')"
        )
    return TeamsChannel(values["team_id"], quote(decoded, safe=""), values["tenant_id"])

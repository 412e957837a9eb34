"""``chat`` (Slack and Microsoft Teams channels for the pages): each ID's shape is checked when the settings are
read, with a message that names the channel, the key and where to find the right value (no synthesis here)."""

from __future__ import annotations

import pytest

from tiered_jobs.cdk.settings import AppSettings, SettingsError
from tiered_jobs.cdk.settings.chat import ChatSettings, SlackChannel, TeamsChannel

SLACK = {"workspace_id": "T07EA123LEP", "channel_id": "C07EZ1ABC23"}
TEAM = "a1b2c3d4-0000-4000-8000-123456789abc"
TENANT = "a1b2c3d4-0000-4000-8000-123456789abd"
TEAMS = {"team_id": TEAM, "channel_id": "19:b6ef35dc342d56ba5654e6fc6d25a071@thread.tacv2", "tenant_id": TENANT}


def _settings(chat) -> AppSettings:
    return AppSettings.from_context({"routes": {"*": "critical"}, "chat": chat})


def test_no_chat_by_default_and_channels_as_given():
    assert AppSettings.from_context({"routes": {"*": "critical"}}).chat is None
    chat = _settings({"slack": [SLACK, {"workspace_id": "E01ABCDEF", "channel_id": "G0PRIVATE1"}], "teams": [TEAMS]})
    assert chat.chat == ChatSettings(
        (SlackChannel("T07EA123LEP", "C07EZ1ABC23"), SlackChannel("E01ABCDEF", "G0PRIVATE1")),
        (TeamsChannel(TEAM, "19%3Ab6ef35dc342d56ba5654e6fc6d25a071%40thread.tacv2", TENANT),),
    )


def test_a_teams_channel_id_is_taken_as_teams_shows_it_or_encoded_and_kept_encoded():
    encoded = {**TEAMS, "channel_id": "19%3ab6ef35dc342d56ba5654e6fc6d25a071%40thread.tacv2"}
    assert _settings({"teams": [encoded]}).chat == _settings({"teams": [TEAMS]}).chat


@pytest.mark.parametrize(
    ("chat", "message"),
    [
        (
            {"slack": [{**SLACK, "channel_id": "#ops"}]},
            r"slack\[0\]: channel_id '#ops' is not a Slack channel ID.*not its #name",
        ),
        ({"slack": [{**SLACK, "workspace_id": "acme"}]}, r"workspace_id 'acme' is not a Slack workspace ID; authorize"),
        ({"slack": [{"channel_id": "C07EZ1ABC23"}]}, r"slack\[0\]: missing workspace_id"),
        ({"slack": [{**SLACK, "channel": "C1"}]}, r"slack\[0\]: unknown key\(s\) 'channel'"),
        ({"slack": [SLACK, SLACK]}, r"chat.slack: a channel is listed twice"),
        ({"teams": [{**TEAMS, "team_id": "Ops team"}]}, r"teams\[0\]: team_id 'Ops team' is not a Microsoft Teams ID"),
        ({"teams": [{**TEAMS, "tenant_id": 7}]}, r"tenant_id 7 is not a Microsoft Teams ID"),
        (
            {"teams": [{**TEAMS, "channel_id": "General"}]},
            r"channel_id 'General' is not a Microsoft Teams channel ID.*/channel/",
        ),
        ({}, r"chat: name at least one channel under 'slack' or 'teams', or remove 'chat'"),
        ({"discord": []}, r"chat: unknown key\(s\) 'discord'"),
        ({"slack": SLACK}, r"chat.slack must be a list of channels, got dict"),
        ([SLACK], r"chat must be an object like"),
    ],
)
def test_a_wrong_channel_fails_early_naming_the_key_and_the_fix(chat, message):
    with pytest.raises(SettingsError, match=message):
        _settings(chat)

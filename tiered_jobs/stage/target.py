"""The stage an operator works on, and the AWS clients to reach it (built on first use)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import discovery


@dataclass
class Target:
    """The stage worked on, and the AWS clients to reach it (built on first use).

    ``credentials`` (``aws_access_key_id``...) are for the local mode's fake ones; otherwise
    credentials and region resolve as for the AWS CLI.
    """

    stage: str
    stack_name: str
    region: str | None
    endpoint_url: str | None
    credentials: dict[str, str] = field(default_factory=dict)
    _clients: dict[str, Any] = field(default_factory=dict)
    _deployment: discovery.Deployment | None = None

    def client(self, service: str, **config: Any) -> Any:
        key = service if not config else f"{service}:{json.dumps(config, sort_keys=True)}"
        if key not in self._clients:
            import boto3
            from botocore.config import Config

            self._clients[key] = boto3.session.Session(region_name=self.region, **self.credentials).client(
                service, endpoint_url=self.endpoint_url, config=Config(**config) if config else None
            )
        return self._clients[key]

    def clients(self) -> list[Any]:
        """The clients built so far (e.g. to count their calls)."""
        return list(self._clients.values())

    def deployment(self) -> discovery.Deployment:
        if self._deployment is None:
            self._deployment = discovery.locate(
                self.stage, self.stack_name, cloudformation=self.client("cloudformation"), ssm=self.client("ssm")
            )
        return self._deployment

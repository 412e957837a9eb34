"""The stage an operator works on, and the AWS clients to reach it (built on first use)."""

from __future__ import annotations

import json
import threading
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
    _session: Any = field(default=None, repr=False, compare=False)
    # A boto3 session is not safe to build clients from on two threads at once (the console serves
    # requests on several); its clients are.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def client(self, service: str, **config: Any) -> Any:
        key = service if not config else f"{service}:{json.dumps(config, sort_keys=True)}"
        with self._lock:
            if key not in self._clients:
                from botocore.config import Config

                self._clients[key] = self.session().client(
                    service, endpoint_url=self.endpoint_url, config=Config(**config) if config else None
                )
            return self._clients[key]

    def session(self) -> Any:
        """One boto3 session for all the target's clients: each new session reads botocore's endpoint
        rules and service models from disk again, about 0.1 s of CPU per client."""
        if self._session is None:
            import boto3

            self._session = boto3.session.Session(region_name=self.region, **self.credentials)
        return self._session

    def clients(self) -> list[Any]:
        """The clients built so far (e.g. to count their calls)."""
        return list(self._clients.values())

    def deployment(self) -> discovery.Deployment:
        if self._deployment is None:
            self._deployment = discovery.locate(
                self.stage, self.stack_name, cloudformation=self.client("cloudformation"), ssm=self.client("ssm")
            )
        return self._deployment

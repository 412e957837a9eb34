"""The small template engine the emulator deploys with: what a CloudFormation resource refers to,
holding resources back from a template (with what refers to them, in creation order), and
resolving the intrinsics against a deployed stack (:class:`Resolver` looks up what a ``Ref`` and a
``Fn::GetAtt`` name there; :mod:`emulator.intrinsics` holds the rest of the grammar).

Knows nothing of moto: :mod:`emulator.moto_patches` uses it for the resources moto cannot create.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from emulator.intrinsics import Intrinsics


def references(node: Any) -> set[str]:
    """Logical ids ``node`` refers to (``Ref``, ``Fn::GetAtt``, ``${...}`` in ``Fn::Sub``)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                found.add(value)
            elif key == "Fn::GetAtt":
                found.add(value[0] if isinstance(value, list) else value.split(".")[0])
            elif key == "Fn::Sub":
                text = value[0] if isinstance(value, list) else value
                found.update(match.split(".")[0] for match in re.findall(r"\$\{([^!}][^}]*)\}", text))
                if isinstance(value, list):
                    found.update(references(value[1]))
            else:
                found.update(references(value))
    elif isinstance(node, list):
        for item in node:
            found.update(references(item))
    return found


def depends_on(resource: Mapping[str, Any]) -> set[str]:
    depends = resource.get("DependsOn", [])
    return {depends} if isinstance(depends, str) else set(depends)


def hold_back(template: Mapping[str, Any], types: set[str]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``(template without them, {logical id: resource held back})`` for the resources of ``types`` and
    everything that refers to them; held-back ones in creation order (dependencies first)."""
    resources = template["Resources"]
    held: set[str] = {lid for lid, r in resources.items() if r["Type"] in types}
    changed = True
    while changed:  # what refers to a held-back resource is held back too (a mere DependsOn is dropped)
        changed = False
        for lid, resource in resources.items():
            if lid not in held and references(resource.get("Properties", {})) & held:
                held.add(lid)
                changed = True
    for key, output in template.get("Outputs", {}).items():
        if references(output) & held:
            raise RuntimeError(f"output {key} refers to a resource held back: {sorted(references(output) & held)}")
    deployable = json.loads(json.dumps(template))
    for lid in held:
        deployable["Resources"].pop(lid)
    for resource in deployable["Resources"].values():
        if "DependsOn" in resource:
            resource["DependsOn"] = sorted(depends_on(resource) - held)
    ordered: dict[str, dict[str, Any]] = {}
    while len(ordered) < len(held):  # dependencies first
        for lid in sorted(held - set(ordered)):
            needs = (references(resources[lid].get("Properties", {})) | depends_on(resources[lid])) & held
            if needs <= set(ordered):
                ordered[lid] = resources[lid]
    return deployable, ordered


class Resolver:
    """Resolves CloudFormation intrinsics against the deployed stack (and resources created since)."""

    def __init__(
        self,
        *,
        physical_ids: Mapping[str, str],
        types: Mapping[str, str],
        parameters: Mapping[str, Any],
        pseudo: Mapping[str, str],
        attribute: Callable[[str, str, str], str],
    ):
        self.physical_ids = dict(physical_ids)
        self.types = dict(types)
        self._parameters = parameters
        self._pseudo = pseudo
        self._attribute = attribute
        #: ``(logical id, attribute) -> value`` for resources created outside CloudFormation.
        self.attributes: dict[tuple[str, str], str] = {}
        self._intrinsics = Intrinsics(ref=self.ref, get_att=self.get_att)

    def ref(self, name: str) -> Any:
        if name in self._pseudo:
            return self._pseudo[name]
        if name in self._parameters:
            return self._parameters[name]
        if name in self.physical_ids:
            return self.physical_ids[name]
        raise KeyError(f"Ref to unknown {name!r}")

    def get_att(self, logical_id: str, attribute: str) -> str:
        if (logical_id, attribute) in self.attributes:
            return self.attributes[(logical_id, attribute)]
        value = self._attribute(self.types[logical_id], self.physical_ids[logical_id], attribute)
        self.attributes[(logical_id, attribute)] = value
        return value

    def resolve(self, node: Any) -> Any:
        """``node`` with every intrinsic resolved; an unknown ``Fn::*`` raises
        :class:`emulator.intrinsics.UnknownIntrinsic`."""
        return self._intrinsics.resolve(node)

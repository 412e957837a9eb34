"""The small template engine the emulator deploys with: what a CloudFormation resource refers to,
holding resources back from a template (with what refers to them, in creation order), and
resolving the intrinsics (``Ref``, ``Fn::GetAtt``, ``Fn::Join``, ``Fn::Sub``) against a deployed stack.

Knows nothing of moto: :mod:`emulator.moto_patches` uses it for the resources moto cannot create.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any


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

    def __init__(self, *, physical_ids: Mapping[str, str], types: Mapping[str, str], parameters: Mapping[str, Any],
                 pseudo: Mapping[str, str], attribute: Callable[[str, str, str], str]):
        self.physical_ids = dict(physical_ids)
        self.types = dict(types)
        self._parameters = parameters
        self._pseudo = pseudo
        self._attribute = attribute
        #: ``(logical id, attribute) -> value`` for resources created outside CloudFormation.
        self.attributes: dict[tuple[str, str], str] = {}

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
        if isinstance(node, list):
            return [self.resolve(item) for item in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, value), = node.items()
            if key == "Ref":
                return self.ref(value)
            if key == "Fn::GetAtt":
                logical_id, attribute = value if isinstance(value, list) else value.split(".", 1)
                return self.get_att(logical_id, attribute)
            if key == "Fn::Join":
                separator, parts = value
                return separator.join(str(part) for part in self.resolve(parts))
            if key == "Fn::Sub":
                return self._sub(value)
            if key.startswith("Fn::"):
                raise NotImplementedError(f"{key} is not resolved by the emulator; extend emulator.template.Resolver")
        return {key: self.resolve(value) for key, value in node.items()}

    def _sub(self, value: Any) -> str:
        text, variables = (value[0], self.resolve(value[1])) if isinstance(value, list) else (value, {})

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name:
                return self.get_att(*name.split(".", 1))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", replace, text)

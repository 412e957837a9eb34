"""One resolver of CloudFormation's intrinsic functions, shared by the emulator and the tests.

What a ``Ref`` or a ``Fn::GetAtt`` names is the caller's to look up, because each answers it
differently: the emulator asks the stack it deployed into moto (:class:`emulator.template.Resolver`),
the infra tests derive what a deployment in one account would hold (``tests/cdk/template_values.py``),
a test names the few values it needs. The rest is CloudFormation's own grammar and lives here once:
``Fn::GetAtt``'s two spellings, ``Fn::Sub``'s variables and its ``${!Literal}`` escape, ``Fn::Join``,
``Fn::Select`` and ``Fn::Split``.

Any other ``Fn::*`` is refused by name (:class:`UnknownIntrinsic`) instead of being passed through:
an ``{"Fn::If": ...}`` left inside a policy, an alarm or a dashboard would reach moto (or a test's
comparison) as a silent wrong value, far from the template that held it.

Lives in ``emulator/`` because the import table lets the tests import the emulator, never the
reverse (docs/architecture.md); it imports nothing but the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The functions :meth:`Intrinsics.resolve` evaluates; ``Ref`` and ``Fn::GetAtt`` through the lookups.
KNOWN = ("Ref", "Fn::GetAtt", "Fn::Join", "Fn::Sub", "Fn::Select", "Fn::Split")

#: ``${name}`` in an ``Fn::Sub`` string; a name starting with ``!`` is the literal ``${name}`` without it.
_SUB_VARIABLE = re.compile(r"\$\{([^}]+)\}")


class UnknownIntrinsic(NotImplementedError):
    """A ``Fn::*`` function outside :data:`KNOWN` (or one of them written in a shape CloudFormation
    does not accept): refused rather than left in the value unresolved."""


@dataclass(frozen=True)
class Intrinsics:
    """Resolves the intrinsics in a template value, with ``ref(name)`` answering a ``Ref`` (a logical
    id, a parameter or a pseudo parameter such as ``AWS::Region``) and ``get_att(logical id,
    attribute)`` an ``Fn::GetAtt``. A lookup that does not know its name raises (``KeyError``...)."""

    ref: Callable[[str], Any]
    get_att: Callable[[str, str], Any]

    def resolve(self, node: Any) -> Any:
        """``node`` with every intrinsic replaced by its value, lists and maps walked recursively."""
        if isinstance(node, list):
            return [self.resolve(item) for item in node]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:  # an intrinsic is a map of exactly one key
            ((key, arg),) = node.items()
            if key == "Ref":
                return self.ref(arg)
            if key == "Fn::GetAtt":
                return self.get_att(*self._get_att_arg(arg))
            if key == "Fn::Join":
                separator, parts = self._pair(key, arg)
                return separator.join(str(part) for part in self.resolve(parts))
            if key == "Fn::Select":
                index, items = self._pair(key, arg)
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::Split":
                separator, text = self._pair(key, arg)
                return str(self.resolve(text)).split(separator)
            if key == "Fn::Sub":
                return self._sub(arg)
            if key.startswith("Fn::"):
                raise UnknownIntrinsic(
                    f"{key} is not resolved here (known: {', '.join(KNOWN)}); "
                    f"extend emulator.intrinsics.Intrinsics: {node!r:.200}"
                )
        return {key: self.resolve(value) for key, value in node.items()}

    @staticmethod
    def _get_att_arg(arg: Any) -> tuple[str, str]:
        """``["Id", "Attr"]`` or ``"Id.Attr"`` (the attribute itself may hold dots, e.g. ``Endpoint.Address``)."""
        if isinstance(arg, str) and "." in arg:
            logical_id, attribute = arg.split(".", 1)
            return logical_id, attribute
        if isinstance(arg, list) and len(arg) == 2 and all(isinstance(part, str) for part in arg):
            return arg[0], arg[1]
        raise UnknownIntrinsic(f"Fn::GetAtt takes [logical id, attribute] or 'LogicalId.Attribute', not {arg!r}")

    @staticmethod
    def _pair(key: str, arg: Any) -> tuple[Any, Any]:
        if not (isinstance(arg, list) and len(arg) == 2):
            raise UnknownIntrinsic(f"{key} takes a list of two arguments, not {arg!r:.200}")
        return arg[0], arg[1]

    def _sub(self, arg: Any) -> str:
        if isinstance(arg, str):
            text, variables = arg, {}
        else:
            text, mapping = self._pair("Fn::Sub", arg)
            variables = self.resolve(mapping)

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name:  # ${Id.Attr} is Fn::GetAtt; ${AWS::Region} and ${Id} are Ref
                return str(self.get_att(*name.split(".", 1)))
            return str(self.ref(name))

        return _SUB_VARIABLE.sub(replace, str(text))

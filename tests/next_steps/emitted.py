"""Every finding the product can emit, read from its source: each call that names a finding id
and a reference section together (`_fail("triage.gpu.ecc", …, "debugging-guide.md § 5")`,
`Finding(id=…, reference=…)`, a helper given both), with the status the call gives it.

Ids built at run time are read as patterns (`triage.gpu.xid_{code}` → `triage.gpu.xid_*`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from hyperpod_nccl.models import REFERENCE_POINTER, Status

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "hyperpod_nccl"
_ID = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_*]+)+$")
_STATUS_OF_HELPER = {"_fail": Status.FAIL, "_warn": Status.WARN, "_consequence": Status.INFO}
_ANY = "*"


@dataclass(frozen=True)
class Declared:
    id: str  # `*` stands for a part computed at run time
    reference: str
    status: Status | None  # None: the call does not say (a helper decides)
    where: str

    @property
    def is_issue(self) -> bool:
        return self.status in (None, Status.FAIL, Status.WARN)


def _constants(body: list[ast.stmt], outer: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Names bound to text at the top of a module or function (`ref = "debugging-guide.md § 3"`), each
    with every text it may hold (`finding_id = HANGUP_ID if hangup else TERMINATED_ID`)."""
    found = dict(outer)
    for node in body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            texts = _texts(node.value, found) if node.value is not None else ()
            for target in targets:
                if isinstance(target, ast.Name) and texts:
                    found[target.id] = texts
    return found


def _texts(node: ast.expr, constants: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Every text an expression may evaluate to; () where it is not text known before run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return (node.value,)
    if isinstance(node, ast.Name):
        return constants.get(node.id, ())
    if isinstance(node, ast.JoinedStr):
        parts = [part.value if isinstance(part, ast.Constant) else _ANY for part in node.values]
        return ("".join(str(part) for part in parts),)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        lefts, rights = _texts(node.left, constants), _texts(node.right, constants)
        return tuple(left + right for left in lefts for right in rights)
    if isinstance(node, ast.IfExp):
        return _texts(node.body, constants) + _texts(node.orelse, constants)
    return ()


def _status(call: ast.Call) -> Status | None:
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
    if name in _STATUS_OF_HELPER:
        return _STATUS_OF_HELPER[name]
    for node in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Status":
            return Status(node.attr)
    return None


def _calls(
    tree: ast.Module, module: dict[str, tuple[str, ...]], scopes: dict[int, dict[str, tuple[str, ...]]]
) -> list[tuple[ast.Call, dict[str, tuple[str, ...]]]]:
    """Every call, with the names its function (or the module) binds to text."""
    found = []
    for function in (f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)):
        found += [(c, scopes[id(function)]) for c in ast.walk(function) if isinstance(c, ast.Call)]
    seen = {id(call) for call, _ in found}
    found += [(c, module) for c in ast.walk(tree) if isinstance(c, ast.Call) and id(c) not in seen]
    return found


def _is_id(text: str) -> bool:
    return _ID.match(text) is not None and not text.endswith((".md", ".py"))


@cache
def declared_findings() -> tuple[Declared, ...]:
    found: list[Declared] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = _constants(tree.body, {})
        scopes = {id(f): _constants(f.body, module) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
        for call, constants in _calls(tree, module, scopes):
            arguments = [_texts(node, constants) for node in [*call.args, *(k.value for k in call.keywords)]]
            # One argument names the finding (one id, or the ids a condition chooses between) and one
            # names its reference.
            ids = [alts for alts in arguments if alts and all(_is_id(text) for text in alts)]
            references = [
                alts[0] for alts in arguments if len(alts) == 1 and REFERENCE_POINTER.match(alts[0])
            ]
            if len(ids) == 1 and len(references) == 1:
                where = f"{path.relative_to(PACKAGE)}:{call.lineno}"
                found += [Declared(one, references[0], _status(call), where) for one in ids[0]]
    return tuple(found)

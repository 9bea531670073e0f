"""Does a loss run through a given network? A small def-use walk for the swap operator.

Swapping two optimizers' resets is a bug only when one phase's loss back-propagates into
the other phase's network (a GAN's generator loss runs through the discriminator; an
actor's loss through the critic). This follows the names a loss is computed from, inside
the loop, back to calls; a call of the network (or of a function of the same file whose
body calls it) means the loss reaches it. Detached values (``.detach()``, ``.item()``,
``.data``) and values computed under ``torch.no_grad()`` carry no gradient and are not
followed. It is a harness heuristic: it errs towards "does not reach", which only drops
a loop from the swap operator.
"""
from __future__ import annotations

import ast
import re

CUTS = {"detach", "item", "data", "numpy", "tolist"}
NO_GRAD = re.compile(r"no_grad|inference_mode")


def loss_reaches(tree: ast.Module, region: ast.AST, losses: frozenset[str], model: str,
                 before: int) -> bool:
    """Whether a value in ``losses`` (as bound in ``region`` before line ``before``)
    is computed by calling ``model`` without detaching."""
    definitions = _definitions(region, before)
    functions = {f.name: f for f in ast.walk(tree)
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
    seen: set[str] = set()
    work = list(losses)
    while work:
        name = work.pop()
        if name in seen:
            continue
        seen.add(name)
        for value in definitions.get(name, []):
            names, callees = _live(value)
            work.extend(names)
            for callee in callees:
                if _is_model(callee, model):
                    return True
                function = functions.get(callee.rsplit(".", 1)[-1])
                if function is not None and any(_is_model(c, model)
                                                for c in _live(function)[1]):
                    return True
    return False


def _is_model(callee: str, model: str) -> bool:
    return callee == model or callee.startswith(model + ".")


def _definitions(region: ast.AST, before: int) -> dict[str, list[ast.expr]]:
    """Name -> the values assigned to it in ``region`` before ``before``, outside no_grad."""
    silenced = {id(node) for with_ in ast.walk(region)
                if isinstance(with_, ast.With) and NO_GRAD.search(ast.unparse(with_.items[0]))
                for node in ast.walk(with_)}
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(region):
        if id(node) in silenced or getattr(node, "lineno", before) >= before:
            continue
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    found.setdefault(name.id, []).append(value)
    return found


def _live(node: ast.AST) -> tuple[list[str], list[str]]:
    """Names read and callees called by ``node``, not entering detached sub-expressions."""
    names, callees = [], []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Attribute) and current.attr in CUTS:
            continue
        if isinstance(current, ast.Call):
            func = current.func
            if isinstance(func, ast.Attribute) and func.attr in CUTS:
                continue
            if isinstance(func, (ast.Name, ast.Attribute)):
                callees.append(ast.unparse(func))
        if isinstance(current, ast.Name):
            names.append(current.id)
        stack.extend(ast.iter_child_nodes(current))
    return names, callees

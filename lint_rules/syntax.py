"""The shape of libcst trees, in the terms the analysis needs.

libcst keeps every token: a line of ``a; b`` is a ``SimpleStatementLine`` holding two small
statements, blocks are ``IndentedBlock`` nodes, ``else:`` is an ``Else`` node and call
arguments are ``Arg`` nodes that may be keywords or starred. The helpers here hide that, so
the analysis reads "the statements of this block" or "the positional arguments of this call".
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst

Statement = cst.BaseSmallStatement | cst.BaseCompoundStatement
FunctionNode = cst.FunctionDef
Block = cst.Module | cst.IndentedBlock | cst.SimpleStatementSuite
SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
_NO_VALUE = object()
# Tokens and whitespace: never analysed, so walks skip them (most of a libcst tree is these).
_TRIVIA = (
    cst.BaseParenthesizableWhitespace, cst.LeftParen, cst.RightParen, cst.Comma, cst.Semicolon,
    cst.Colon, cst.Dot, cst.AssignEqual, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline,
    cst.Comment, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.ImportStar, cst.Asynchronous, cst.BaseBinaryOp, cst.BaseBooleanOp,
    cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp,
)
_FIELDS: dict[type, tuple[str, ...]] = {}
_KIND: dict[type, int] = {}
_CHILDREN: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] = {}
_MAY_JUMP: dict[int, tuple[cst.CSTNode, bool]] = {}
_BOUND: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}  # 0: not a node, 1: a node worth walking, 2: trivia
# NOTE: libcst's node classes are ABCs, whose isinstance() is slow enough to dominate a walk;
# classifying each concrete type once keeps walks cheap.


def _kind(value: object) -> int:
    kind = _KIND.get(type(value))
    if kind is None:
        kind = _KIND[type(value)] = (
            0 if not isinstance(value, cst.CSTNode) else 2 if isinstance(value, _TRIVIA) else 1
        )
    return kind


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Child nodes in field order (source order for statements), without tokens and whitespace.

    The list is shared between calls: do not modify it.

    >>> [type(c).__name__ for c in children(cst.parse_expression("f(x)"))]
    ['Name', 'Arg']
    """
    cached = _CHILDREN.get(id(node))
    if cached is not None and cached[0] is node:
        return cached[1]
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(
            f.name for f in dataclasses.fields(node) if not f.name.startswith("whitespace")
            and f.name not in ("lpar", "rpar", "leading_lines", "header", "footer")
        )
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if type(value) is tuple or type(value) is list:
            out.extend(v for v in value if _kind(v) == 1)
        elif _kind(value) == 1:
            out.append(value)
    _CHILDREN[id(node)] = (node, out)
    return out


def forget_trees() -> None:
    """Drop the per-node memos (children, jumps, bound names) of the trees analysed so far.

    The analysis walks the same subtrees many times (each loop pass, each enclosing
    statement), so their children are computed once and kept with the node itself, which
    keeps the node alive and its id unique. ``check_source`` calls this after each module.
    """
    _CHILDREN.clear()
    _MAY_JUMP.clear()
    _BOUND.clear()


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and every node below it (any order)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def statements(block: Block | None) -> list[Statement]:
    """The statements of a block, with each line of ``a; b`` split into its small statements."""
    if block is None:
        return []
    out: list[Statement] = []
    for item in block.body:
        if isinstance(item, cst.SimpleStatementLine):
            out.extend(item.body)
        else:
            out.append(item)
    return out


def body_of(stmt: cst.CSTNode) -> list[Statement]:
    """The main body of a compound statement (or of an ``else``/``except``/``case`` clause)."""
    body = getattr(stmt, "body", None)
    return statements(body) if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else []


def orelse_of(stmt: cst.CSTNode) -> list[Statement]:
    """The ``else`` branch: an ``elif`` is one nested ``If`` statement, as in Python's grammar."""
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, cst.If):
        return [orelse]
    return body_of(orelse) if orelse is not None else []


def is_block(node: cst.CSTNode) -> bool:
    return isinstance(node, (cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite))


def positional(call: cst.Call) -> list[cst.CSTNode]:
    """Positional arguments; a ``*args`` argument stays an ``Arg`` (which no helper can name)."""
    return [a if a.star else a.value for a in call.args if a.keyword is None and a.star != "**"]


def keywords(call: cst.Call) -> list[tuple[str | None, cst.BaseExpression]]:
    """``(name, value)`` per keyword argument; ``**kwargs`` has the name None."""
    return [(a.keyword.value if a.keyword else None, a.value) for a in call.args
            if a.keyword is not None or a.star == "**"]


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    return next((value for key, value in keywords(call) if key == name), None)


def elements(node: cst.Tuple | cst.List) -> list[cst.CSTNode]:
    """Items of a tuple or list display; a starred item stays a ``StarredElement``."""
    return [e.value if isinstance(e, cst.Element) else e for e in node.elements]


def callee_name(call: cst.Call) -> str:
    """``step`` for ``opt.step()``, ``train`` for ``train()``, else ""."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def constant(node: cst.CSTNode):
    """The value of a literal (numbers, plain strings, None/True/False); ``NO_VALUE`` otherwise."""
    if isinstance(node, cst.Name):
        return {"None": None, "True": True, "False": False}.get(node.value, _NO_VALUE)
    if isinstance(node, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        try:
            return node.evaluated_value
        except (ValueError, SyntaxError, MemoryError, RecursionError):  # e.g. a bad escape
            return _NO_VALUE
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value  # None when an f-string takes part
        return _NO_VALUE if value is None else value
    if isinstance(node, cst.Ellipsis):
        return ...
    return _NO_VALUE


def has_value(value) -> bool:
    return value is not _NO_VALUE


def names_in(node: cst.CSTNode) -> set[str]:
    """Identifiers read in an expression: not attribute names, not keyword-argument names."""
    skip: set[int] = set()
    out: set[str] = set()
    for n in walk(node):
        if isinstance(n, cst.Attribute):
            skip.add(id(n.attr))
        elif isinstance(n, cst.Arg) and n.keyword is not None:
            skip.add(id(n.keyword))
        elif isinstance(n, cst.Name) and id(n) not in skip:
            out.add(n.value)
    return out


def stored_names(target: cst.CSTNode) -> set[str]:
    """Names bound by an assignment target: ``a`` and ``b`` in ``a, *b = ...``, none in ``x.y``."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in stored_names(e.value)}
    if isinstance(target, cst.StarredElement):
        return stored_names(target.value)
    return set()


def assignment_targets(node: cst.CSTNode) -> list[cst.CSTNode]:
    """What a node binds: assignment, loop, ``with ... as`` and walrus targets."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
        return [node.target]
    if isinstance(node, cst.WithItem) and node.asname is not None:
        return [node.asname.name]
    return []


def parameter_names(params: cst.Parameters) -> list[str]:
    """Every parameter name of a function, in order."""
    out = [p.name.value for p in (*params.posonly_params, *params.params)]
    if isinstance(params.star_arg, cst.Param):
        out.append(params.star_arg.name.value)
    out += [p.name.value for p in params.kwonly_params]
    if params.star_kwarg is not None:
        out.append(params.star_kwarg.name.value)
    return out


_JUMPS = (cst.Break, cst.Continue, cst.Return, cst.Raise)
_JUMP_TYPES = frozenset(_JUMPS)  # libcst's node classes are final: type() is exact and cheap
# Tests made of names, attributes, literals and operators keep their value within one pass
# of a loop unless one of their names is assigned; any call or subscript might not.
_PLAIN_TEST = (
    cst.Name, cst.Attribute, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
    cst.ConcatenatedString, cst.Ellipsis, cst.Comparison, cst.ComparisonTarget,
    cst.BooleanOperation, cst.BinaryOperation, cst.UnaryOperation,
)


def is_plain_test(test: cst.CSTNode) -> bool:
    """Only names, attributes, literals and operators (no calls, subscripts, f-strings)."""
    return all(isinstance(n, _PLAIN_TEST) for n in walk(test))


def has_modulo(node: cst.CSTNode) -> bool:
    """Whether an expression uses ``%`` (a counter test such as ``i % k == 0``)."""
    return any(isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo)
               for n in walk(node))


def may_jump(stmt: Statement) -> bool:
    """Whether ``stmt`` may leave its block early (break, continue, return, raise)."""
    if isinstance(stmt, _JUMPS):
        return True
    cached = _MAY_JUMP.get(id(stmt))
    if cached is not None and cached[0] is stmt:
        return cached[1]
    jumps = isinstance(stmt, cst.BaseCompoundStatement) and any(
        type(n) in _JUMP_TYPES for n in walk(stmt))
    _MAY_JUMP[id(stmt)] = (stmt, jumps)
    return jumps


def bound_names(node: cst.CSTNode) -> set[str]:
    """Names a loop (or a function, with its parameters but ``self``/``cls``) may rebind."""
    cached = _BOUND.get(id(node))
    if cached is not None and cached[0] is node:
        return set(cached[1])
    names = set()
    if isinstance(node, cst.FunctionDef):
        names.update(parameter_names(node.params))
        names -= {"self", "cls"}
    for n in walk(node):
        for target in assignment_targets(n):
            names.update(stored_names(target))
    _BOUND[id(node)] = (node, frozenset(names))
    return names

"""The shape of Python's own syntax trees (``ast``), in the terms the analysis needs.

The flow analysis reads the standard library's trees: they parse about ten times faster
than libcst's concrete trees and carry far fewer nodes. The helpers here answer "the
statements of this block", "the positional arguments of this call", "the names bound
here", and cache what the analysis asks again and again (children, jumps, bound names).
Whole-line fixes need no libcst either: they edit the text at the positions the trees report.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

Statement = ast.stmt
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
FOR_LOOPS = (ast.For, ast.AsyncFor)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
WITHS = (ast.With, ast.AsyncWith)
TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))  # TryStar: Python 3.11+
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, *TRIES,
            ast.Match, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_NO_VALUE = object()
_AST = ast.AST
_FIELDS: dict[type, tuple[str, ...]] = {}
_CHILDREN: dict[int, tuple[ast.AST, list[ast.AST]]] = {}
_MAY_JUMP: dict[int, tuple[ast.AST, bool]] = {}
_BOUND: dict[int, tuple[ast.AST, frozenset[str]]] = {}
_MEMO: dict[tuple[str, int], tuple[ast.AST, object]] = {}


def _fields_of(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = tuple(
            # contexts and operators are shared singletons in CPython's trees, never analysed
            f for f in kind._fields if f not in ("ctx", "op", "ops", "type_comment")
        )
    return names


def children(node: ast.AST) -> list[ast.AST]:
    """Child nodes in source order, without contexts and operators.

    The list is shared between calls: do not modify it.

    >>> [type(c).__name__ for c in children(ast.parse("f(x)", mode="eval").body)]
    ['Name', 'Name']
    """
    cached = _CHILDREN.get(id(node))
    if cached is not None and cached[0] is node:
        return cached[1]
    kind = type(node)
    out: list[ast.AST] = []
    if kind is ast.Dict:
        for key, value in zip(node.keys, node.values):
            if key is not None:
                out.append(key)
            out.append(value)
    else:
        # Contexts and operators live only in the fields `_fields_of` leaves out.
        for name in _FIELDS.get(kind) or _fields_of(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                out += [v for v in value if isinstance(v, _AST)]
            elif isinstance(value, _AST):
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
    _MEMO.clear()


def memoised(kind: str, node: ast.AST, compute):
    """``compute(node)``, computed once per node and ``kind`` until ``forget_trees()``."""
    key = (kind, id(node))
    cached = _MEMO.get(key)
    if cached is not None and cached[0] is node:
        return cached[1]
    value = compute(node)
    _MEMO[key] = (node, value)
    return value


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and every node below it (any order)."""
    stack = [node]
    pop, extend, memo = stack.pop, stack.extend, _CHILDREN.get
    while stack:
        current = pop()
        yield current
        # the memo inline: this loop runs for every node the analysis visits
        cached = memo(id(current))
        extend(cached[1] if cached is not None and cached[0] is current else children(current))


def body_of(stmt: ast.AST) -> list[Statement]:
    """The main body of a compound statement (or of an ``except``/``case`` clause)."""
    body = getattr(stmt, "body", None)
    return body if type(body) is list else []


def orelse_of(stmt: ast.AST) -> list[Statement]:
    """The ``else`` branch: an ``elif`` is one nested ``If`` statement, as in Python's grammar."""
    return getattr(stmt, "orelse", None) or []


def blocks_of(node: ast.AST) -> list[list[Statement]]:
    """Every statement list directly inside ``node`` (body, else, finally, handler bodies)."""
    out = [getattr(node, name) for name in ("body", "orelse", "finalbody")
           if type(getattr(node, name, None)) is list]
    return [block for block in out if block and isinstance(block[0], ast.stmt)]


def positional(call: ast.Call) -> list[ast.AST]:
    """Positional arguments; a ``*args`` argument stays a ``Starred`` (which no helper can name)."""
    return call.args


def call_values(call: ast.Call) -> list[ast.AST]:
    """Every argument's value, positional and keyword."""
    return [*call.args, *(k.value for k in call.keywords)]


def keywords(call: ast.Call) -> list[tuple[str | None, ast.expr]]:
    """``(name, value)`` per keyword argument; ``**kwargs`` has the name None."""
    return [(k.arg, k.value) for k in call.keywords]


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def elements(node: ast.Tuple | ast.List) -> list[ast.AST]:
    """Items of a tuple or list display; a starred item stays a ``Starred``."""
    return node.elts


def callee_name(call: ast.Call) -> str:
    """``step`` for ``opt.step()``, ``train`` for ``train()``, else ""."""
    func = call.func
    kind = type(func)
    if kind is ast.Attribute:
        return func.attr
    return func.id if kind is ast.Name else ""


def constant(node: ast.AST):
    """The value of a literal (numbers, plain strings, None/True/False); ``NO_VALUE`` otherwise."""
    return node.value if type(node) is ast.Constant else _NO_VALUE


def has_value(value) -> bool:
    return value is not _NO_VALUE


def name_of(node: ast.AST) -> str | None:
    """The identifier of a plain name, else None."""
    return node.id if type(node) is ast.Name else None


def names_in(node: ast.AST) -> set[str]:
    """Identifiers read in an expression: not attribute names, not keyword-argument names."""
    return {n.id for n in walk(node) if type(n) is ast.Name}


def paths_in(node: ast.AST) -> set[str]:
    """The longest dotted paths read in an expression: ``self.opt.netF`` in
    ``self.opt.netF == 'mlp'``, ``x`` in ``x[i] + 1``.

    >>> sorted(paths_in(ast.parse("a.b.c == f(d)", mode="eval").body))
    ['a.b.c', 'd', 'f']
    """
    out: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is ast.Attribute or type(current) is ast.Name:
            path = _path(current)
            if path is not None:
                out.add(path)
                continue
        stack.extend(children(current))
    return out


def _path(node: ast.AST) -> str | None:
    if type(node) is ast.Name:
        return node.id
    if type(node) is ast.Attribute:
        base = _path(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def written_path(target: ast.AST) -> str | None:
    """The dotted path an assignment target writes into: ``a.b`` for ``a.b = v`` and for
    ``a.b[i] = v``; None where it is not a path (``f().x = v``)."""
    while type(target) is ast.Subscript:
        target = target.value
    return _path(target)


def related_paths(a: str, b: str) -> bool:
    """Whether writing one of two paths can change what the other reads (``self.opt`` and
    ``self.opt.netF``, not ``self.loss`` and ``self.opt``)."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def target_paths(target: ast.AST) -> set[str]:
    """Paths an assignment target writes: ``self.loss_G``, ``x`` for ``x[i]``, each of a tuple."""
    if type(target) in (ast.Tuple, ast.List):
        return {p for element in target.elts for p in target_paths(element)}
    if type(target) is ast.Starred:
        return target_paths(target.value)
    while type(target) is ast.Subscript:
        target = target.value
    path = _path(target)
    return {path} if path is not None else names_in(target)


def paired(target: ast.AST, value: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """``self.a, self.b = a, b`` pairs each element with its value; otherwise the whole."""
    if type(target) in (ast.Tuple, ast.List) and type(value) in (ast.Tuple, ast.List) \
            and len(target.elts) == len(value.elts):
        return [pair for t, v in zip(target.elts, value.elts) for pair in paired(t, v)]
    return [(target, value)]


def stored_names(target: ast.AST) -> set[str]:
    """Names bound by an assignment target: ``a`` and ``b`` in ``a, *b = ...``, none in ``x.y``."""
    kind = type(target)
    if kind is ast.Name:
        return {target.id}
    if kind is ast.Tuple or kind is ast.List:
        return {n for e in target.elts for n in stored_names(e)}
    if kind is ast.Starred:
        return stored_names(target.value)
    return set()


def assignment_targets(node: ast.AST) -> list[ast.AST]:
    """What a node binds: assignment, loop, ``with ... as`` and walrus targets."""
    kind = type(node)
    if kind is ast.Assign:
        return node.targets
    if kind in _TARGETED:
        return [node.target]
    if kind is ast.withitem and node.optional_vars is not None:
        return [node.optional_vars]
    return []


_TARGETED = frozenset({ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension,
                       ast.NamedExpr})


def parameter_names(params: ast.arguments) -> list[str]:
    """Every parameter name of a function, in order."""
    out = [p.arg for p in (*params.posonlyargs, *params.args)]
    if params.vararg is not None:
        out.append(params.vararg.arg)
    out += [p.arg for p in params.kwonlyargs]
    if params.kwarg is not None:
        out.append(params.kwarg.arg)
    return out


def call_arguments(fn: ast.AST, call: ast.Call) -> list[tuple[str, ast.AST]]:
    """(parameter, argument) for what ``call`` passes to ``fn`` by position or keyword."""
    params = [p.arg for p in (*fn.args.posonlyargs, *fn.args.args)]
    if params and params[0] in ("self", "cls") and type(call.func) is ast.Attribute:
        params = params[1:]
    pairs = list(zip(params, positional(call)))
    return pairs + [(name, value) for name, value in keywords(call) if name]


def defaults_of(params: ast.arguments) -> list[tuple[str, ast.expr | None]]:
    """(name, default or None) of every parameter that can be passed by name."""
    positional_params = [*params.posonlyargs, *params.args]
    padded = [None] * (len(positional_params) - len(params.defaults)) + list(params.defaults)
    pairs = [(p.arg, d) for p, d in zip(positional_params, padded)]
    return pairs + [(p.arg, d) for p, d in zip(params.kwonlyargs, params.kw_defaults)]


_JUMP_TYPES = frozenset({ast.Break, ast.Continue, ast.Return, ast.Raise})
# Tests made of names, attributes, literals and operators keep their value within one pass
# of a loop unless one of their names is assigned; any call or subscript might not.
_PLAIN_TEST = frozenset({ast.Name, ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp,
                         ast.BinOp, ast.UnaryOp})
_COMPOUND_TYPES = frozenset(COMPOUND)


def is_plain_test(test: ast.AST) -> bool:
    """Only names, attributes, literals and operators (no calls, subscripts, f-strings)."""
    return all(type(n) in _PLAIN_TEST for n in walk(test))


def assigned_in(statements: list[ast.AST]) -> set[str]:
    """Names that plain assignments anywhere in ``statements`` bind (``if`` blocks that set
    their own test's variable again: ``if not left: ...; left = k``)."""
    return {n for s in statements for node in walk(s) if type(node) is ast.Assign
            for t in node.targets for n in stored_names(t)}


def has_modulo(node: ast.AST) -> bool:
    """Whether an expression uses ``%`` (a counter test such as ``i % k == 0``)."""
    return any(type(n) is ast.BinOp and type(n.op) is ast.Mod for n in walk(node))


def is_not(node: ast.AST) -> bool:
    """``not x``."""
    return type(node) is ast.UnaryOp and type(node.op) is ast.Not


def may_jump(stmt: Statement) -> bool:
    """Whether ``stmt`` may leave its block early (break, continue, return, raise)."""
    kind = type(stmt)
    if kind in _JUMP_TYPES:
        return True
    if kind not in _COMPOUND_TYPES:
        return False
    cached = _MAY_JUMP.get(id(stmt))
    if cached is not None and cached[0] is stmt:
        return cached[1]
    jumps = any(type(n) in _JUMP_TYPES for n in walk(stmt))
    _MAY_JUMP[id(stmt)] = (stmt, jumps)
    return jumps


def is_compound(stmt: ast.AST) -> bool:
    return type(stmt) in _COMPOUND_TYPES


def bound_names(node: ast.AST) -> set[str]:
    """Names a loop (or a function, with its parameters but ``self``/``cls``) may rebind."""
    cached = _BOUND.get(id(node))
    if cached is not None and cached[0] is node:
        return set(cached[1])
    names = set()
    if isinstance(node, FUNCTIONS):
        names.update(parameter_names(node.args))
        names -= {"self", "cls"}
    for n in walk(node):
        for target in assignment_targets(n):
            names.update(stored_names(target))
    _BOUND[id(node)] = (node, frozenset(names))
    return names


# Comparisons written as the negation of another: `a != b` is `not (a == b)`.
_NEGATED = {ast.NotEq: ("==", True), ast.Eq: ("==", False), ast.LtE: (">", True),
            ast.Gt: (">", False), ast.GtE: ("<", True), ast.Lt: ("<", False),
            ast.IsNot: (" is ", True), ast.Is: (" is ", False), ast.NotIn: (" in ", True),
            ast.In: (" in ", False)}


def canonical_test(test: ast.AST, segment) -> tuple[str, bool]:
    """The text (without whitespace) that names a test, and whether the test is its negation:
    `if not c:` and `if c:` name the same test, and so do `x != 0` and `x == 0`, or `x <= k`
    and `x > k`. ``segment`` gives a node's source text.

    >>> import ast as _ast
    >>> source = "i % k != 0"
    >>> canonical_test(_ast.parse(source, mode="eval").body, lambda n: _ast.get_source_segment(source, n))
    ('i%k==0', True)
    """
    negated = False
    while is_not(test):
        test, negated = test.operand, not negated
    if type(test) is ast.Compare and len(test.ops) == 1 and type(test.ops[0]) in _NEGATED:
        op, flips = _NEGATED[type(test.ops[0])]
        text = "".join(segment(test.left).split()) + op + "".join(segment(test.comparators[0]).split())
        return text, negated != flips
    return "".join(segment(test).split()), negated


def integer_bound(test: ast.AST) -> tuple[str, str, int] | None:
    """``(path, op, n)`` for a comparison of a name or attribute with an integer literal
    (``accum_count > 1``, ``1 == args.k``), with ``op`` one of ``==``, ``>``, ``<``; None
    for anything else (its negations count as the same bound, negated)."""
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) not in _NEGATED:
        return None
    left, right, op = test.left, test.comparators[0], _NEGATED[type(test.ops[0])][0]
    if type(left) is ast.Constant and type(right) is not ast.Constant:
        left, right, op = right, left, {">": "<", "<": ">"}.get(op, op)
    value = constant(right)
    path = _path(left) if type(left) in (ast.Name, ast.Attribute) else None
    if path is None or op not in ("==", ">", "<") or type(value) is not int:
        return None
    return path, op, value


def bounds_agree(bounds: list[tuple[str, int, bool]]) -> bool:
    """Whether some integer satisfies every ``(op, n, holds)`` of one variable.

    >>> bounds_agree([(">", 1, True), ("==", 1, True)]), bounds_agree([(">", 1, False), ("==", 1, False)])
    (False, True)
    """
    points = {n + d for _, n, _ in bounds for d in (-1, 0, 1)} | {-(10 ** 9), 10 ** 9}
    check = {"==": lambda x, n: x == n, ">": lambda x, n: x > n, "<": lambda x, n: x < n}
    return any(all(check[op](x, n) == holds for op, n, holds in bounds) for x in points)


def first_iteration_test(test: ast.AST, counter: str, first: bool | None = None):
    """``i == 0`` (also ``i != 0``, ``i > 0``, ``not i``) on a loop counter: its truth on the
    first iteration (``first``) or on the later ones; None for any other test. Without
    ``first``, whether ``test`` is such a test at all (True) or not (None)."""
    negated = False
    while is_not(test):
        test, negated = test.operand, not negated
    if type(test) is ast.Name and test.id == counter:
        zero_is = False  # `if i:` is false on the first iteration
    elif type(test) is ast.Compare and len(test.ops) == 1 and type(test.left) is ast.Name \
            and test.left.id == counter and constant(test.comparators[0]) == 0 \
            and type(test.comparators[0]) is ast.Constant and type(test.ops[0]) in _ZERO_TESTS:
        zero_is = _ZERO_TESTS[type(test.ops[0])]
    else:
        return None
    if first is None:
        return True
    value = zero_is if first else not zero_is
    return value != negated


_ZERO_TESTS = {ast.Eq: True, ast.NotEq: False, ast.Gt: False, ast.LtE: True}

def ascending_counter(loop: ast.AST) -> str | None:
    """The name a ``for`` loop counts up with: ``i`` of ``range(...)`` (no step, or a
    positive literal one), ``trange(...)``, ``tqdm(range(...))`` or ``enumerate(...)``."""
    if not isinstance(loop, FOR_LOOPS) or type(loop.iter) is not ast.Call:
        return None
    it, target = loop.iter, loop.target
    name = callee_name(it)
    if name in ("tqdm", "tqdm.tqdm") and it.args and type(it.args[0]) is ast.Call:
        it, name = it.args[0], callee_name(it.args[0])
    if name == "enumerate" and type(target) is ast.Tuple and target.elts:
        target = target.elts[0]
    elif name not in ("range", "trange") or len(it.args) == 3 and not (
            type(step := constant(it.args[2])) is int and step > 0):
        return None
    return target.id if type(target) is ast.Name else None


def settled_truth(test: ast.AST, counter: str) -> bool | None:
    """For a test that compares an ascending counter with something else, the truth that
    holds on every later iteration once it holds: False for ``epoch < start`` (a prefix of
    the loop), True for ``epoch >= warmup``; None for any other test.

    >>> settled_truth(ast.parse("not epoch < start", mode="eval").body, "epoch")
    True
    """
    negated = False
    while is_not(test):
        test, negated = test.operand, not negated
    if type(test) is not ast.Compare or len(test.ops) != 1:
        return None
    left, right, op = test.left, test.comparators[0], type(test.ops[0])
    if type(right) is ast.Name and right.id == counter:
        left, right, op = right, left, _MIRRORED.get(op)
    if type(left) is not ast.Name or left.id != counter or counter in names_in(right) \
            or op not in _RISING_TRUTH:
        return None
    return _RISING_TRUTH[op] != negated


_MIRRORED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
# the truth a comparison `counter OP bound` keeps once the rising counter reaches it
_RISING_TRUTH = {ast.Lt: False, ast.LtE: False, ast.Gt: True, ast.GtE: True}

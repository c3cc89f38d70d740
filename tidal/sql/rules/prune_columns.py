"""Rule: read from each file only the columns the query uses.

Window functions pass on the columns read above them and the ones their calls read (partition, order,
arguments): rows tied on a call's ORDER BY keys are then ordered by the columns the query reads, which
gives the same answer for those columns whichever hidden columns the rows carried (SQL leaves the
order of tied rows open; tidal keeps it a function of the rows read)."""

from __future__ import annotations

from dataclasses import replace

from ..logical import (
    Aggregate,
    EventTime,
    Filter,
    Join,
    MatchRecognize,
    Node,
    Project,
    Scan,
    Session,
    Tumble,
    UnionAll,
    WindowFunctions,
)
from ..logical.exprs import _columns


def prune_columns(root: Node) -> Node:
    """Read from each file only the columns the query uses."""

    def visit(node: Node, needed: set[str] | None) -> Node:
        # needed: the node's output columns its consumer uses (None = all)
        if isinstance(node, Scan):
            if needed is None:
                return node
            keep = [i for i, n in enumerate(node.names) if n in needed]
            if node.predicate is not None:
                pred_cols = _columns(node.predicate)
                keep = sorted(set(keep) | {i for i, n in enumerate(node.names) if n in pred_cols})
            if not keep:
                keep = [0]  # a count(*) still needs the rows: read the first column
            if len(keep) == len(node.names):
                return node
            return replace(
                node,
                names=tuple(node.names[i] for i in keep),
                scope=tuple(node.scope[i] for i in keep),
                types=tuple(node.types[i] for i in keep),
                file_columns=tuple(node.file_columns[i] for i in keep),
            )
        if isinstance(node, Project):
            exprs = node.exprs if needed is None else tuple((n, e) for n, e in node.exprs if n in needed)
            if len(exprs) != len(node.exprs):
                idx = [i for i, (n, _) in enumerate(node.exprs) if n in needed]
                node = replace(
                    node, exprs=exprs, scope=tuple(node.scope[i] for i in idx), types=tuple(node.types[i] for i in idx)
                )
            uses = set().union(*(_columns(e) for _, e in exprs)) if exprs else set()
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, Filter):
            uses = _columns(node.condition) | (set(node.names) if needed is None else needed)
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, Aggregate):
            uses = set(node.keys) | {a.argument for a in node.aggs if a.argument}
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, EventTime):
            uses = None if needed is None else needed | {node.time_field}
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, Tumble | Session):
            keys = node.keys if isinstance(node, Session) else ()
            uses = None if needed is None else (needed - {"window_start", "window_end"}) | {node.time_field, *keys}
            pruned = visit(node.input, uses)
            # the window columns follow the input's: the scope shrinks with it
            by_name = dict(zip(node.names, node.scope, strict=True))
            scope = tuple(by_name[n] for n in (*pruned.names, "window_start", "window_end"))
            return replace(node, input=pruned, scope=scope)
        if isinstance(node, WindowFunctions) and needed is not None and len(node.scope) == len(node.names):
            outputs = {c.output for c in node.calls}
            uses = set(needed) - outputs
            for c in node.calls:
                uses |= {*c.partition, *(o[0] for o in c.order), *c.args}
            pruned = visit(node.input, uses & set(node.input.names))
            names = (*pruned.names, *(c.output for c in node.calls))
            scope, types = (
                dict(zip(node.names, node.scope, strict=True)),
                dict(zip(node.names, node.types, strict=True)),
            )
            return replace(
                node, input=pruned, scope=tuple(scope[n] for n in names), types=tuple(types[n] for n in names)
            )
        if isinstance(node, UnionAll):
            return node.with_inputs((visit(node.left, None), visit(node.right, None)))
        if isinstance(node, MatchRecognize):  # every column the rows are matched or measured by
            uses = {node.time_field, *node.keys, *(m.column for _, m in node.measures if m.column)}
            for _, cond, refs in node.define:
                uses |= {c for c in _columns(cond) if not c.startswith("__ref")} | {r.column for r in refs if r.column}
            return replace(node, input=visit(node.input, uses))
        if isinstance(node, Join):
            uses = (set(node.names) if needed is None else set(needed)) | set(node.left_keys) | set(node.right_keys)
            if node.condition is not None:
                uses |= _columns(node.condition)
            left = visit(node.left, uses & set(node.left.names))
            right = visit(node.right, uses & set(node.right.names))
            return node.with_inputs((left, right))
        return node.with_inputs(tuple(visit(i, None) for i in node.inputs))

    return visit(root, None)

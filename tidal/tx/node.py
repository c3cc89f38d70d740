"""The ``Transact`` plan node: ``stream.transact(access, post=None, scheduler=...)``."""

from __future__ import annotations

import os

import numba
import pyarrow as pa

from ..core.errors import PlanError
from ..ops.base import Operator
from ..plan.node import PlanNode
from .engine import Engine, describe_setup
from .operator import Post, TransactOp
from .schedule import AUTO, SCHEDULERS, pick
from .trace import trace


class Transact(PlanNode):
    label = "Transact"

    def __init__(
        self,
        input: PlanNode,
        access,
        post=None,
        scheduler: str = AUTO,
        interval: int = 500,
        workers: int | None = None,
        partitions: int | None = None,
    ):
        if scheduler not in (*SCHEDULERS, AUTO):
            raise PlanError(f"transact: scheduler {scheduler!r} is not supported; choose one of {[AUTO, *SCHEDULERS]}")
        if not isinstance(interval, int) or interval < 1:
            raise PlanError(f"transact: interval must be a positive number of events, not {interval!r}")
        workers = workers or os.cpu_count() or 1
        partitions = partitions or workers
        if workers < 1 or partitions < 1:
            raise PlanError("transact: workers and partitions must be at least 1")
        scheduler, chosen = pick(scheduler, min(workers, numba.config.NUMBA_NUM_THREADS))
        fields = None if input.schema is None else list(input.schema.names)
        tracer = trace(access, fields)
        reads = {
            t.name: pa.int64() if t.table.columns[t.column].dtype.kind == "i" else pa.float64()
            for t in tracer.ops
            if t.name is not None
        }
        if post is None:
            added = [pa.field("committed", pa.bool_())] + [pa.field(k, v) for k, v in reads.items()]
            clash = [f.name for f in added if input.schema is not None and f.name in input.schema.names]
            if clash:
                raise PlanError(f"transact: the events already have field(s) {clash}; rename the reads or pass post=")
            schema = None if input.schema is None else pa.schema(list(input.schema) + added)
            props = input.props
            post_fn = None
        else:
            schema, props, post_fn = None, input.props.but(sorted_by=()), Post(post)
        super().__init__(
            (input,), schema, props, partitioning=((),), access=access, post=post_fn, templates=tracer.ops,
            read_names=reads, scheduler=scheduler, chosen=chosen, interval=interval, workers=workers,
            partitions=partitions, box={},
        )  # fmt: skip

    def make(self) -> Operator:
        engine = Engine(self.templates, self.scheduler, self.interval, self.workers, self.partitions)
        engine.box = self.box
        return TransactOp(engine, self.post, self.read_names)

    def describe(self, measured: bool = True) -> str:
        engine = self.box.get("last") if measured else None
        head = (
            engine.describe()
            if engine
            else describe_setup(self.scheduler, self.interval, self.workers, self.partitions)
        )
        ops = "; ".join(t.describe() for t in self.templates)
        post = "" if self.post is None else f"; {self.post.describe()}"
        chosen = f" ({self.chosen})" if self.chosen else ""
        return f"{head}{chosen}; operations: {ops}{post}"

    def describe_plan(self) -> str:
        return self.describe(measured=False)

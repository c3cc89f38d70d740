"""What every aggregate variant shares: the variant codes and their choice, argument columns, the engine interface."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...core.batch import EventBatch, as_numpy
from ...core.errors import PlanError
from ...expr.compile import CompiledLambda
from ...expr.kernels import Evaluator, to_arrow_column
from ...expr.nodes import Node
from .functions import SumOverflowError
from .picks import pair_column

MODE_NONE, MODE_FIFO, MODE_HEAP, MODE_WINDOW = 0, 1, 2, 3
VARIANTS = {
    MODE_NONE: "start edges only (no endpoint queue)",
    MODE_FIFO: "constant duration (FIFO endpoint queue)",
    MODE_HEAP: "general (priority endpoint queue)",
    MODE_WINDOW: "tumbling window (no endpoint queue)",
}


def choose_mode(props, force: str | None = None) -> int:
    """The physical variant for a stream with these properties (``force`` names one, for tests)."""
    if force is not None:
        names = {"start_edge": MODE_NONE, "fifo": MODE_FIFO, "general": MODE_HEAP, "window": MODE_WINDOW}
        if force not in names:
            raise PlanError(f"unknown aggregate variant {force!r}; variants are {sorted(names) + ['fused']}")
        return names[force]
    hop, dur = props.constant_hop, props.constant_duration
    if hop is not None and dur is not None and dur <= hop[0]:
        return MODE_WINDOW
    if props.start_edge_only:
        return MODE_NONE
    if dur is not None:
        return MODE_FIFO
    return MODE_HEAP


class ArgumentColumn:
    """The column an aggregate reads: a field, or a row lambda compiled like any other."""

    def __init__(self, arg, schema: pa.Schema | None):
        self.arg = arg
        self.node = arg if isinstance(arg, Node) else None  # a user aggregate's compiled contribution
        plain = arg is None or isinstance(arg, str | tuple) or self.node is not None  # tuple: arg_min's (by, x)
        self.fn = None if plain else CompiledLambda(arg, schema, truth=False)
        for name in (arg,) if isinstance(arg, str) else arg if isinstance(arg, tuple) else ():
            if schema is not None and name not in schema.names:
                raise PlanError(f"aggregate argument {name!r} is not a field; fields are {schema.names}")

    def columns(self) -> set[str] | None:
        """The payload fields this argument reads (None: not known, a lambda run row by row)."""
        if self.arg is None:
            return set()
        if isinstance(self.arg, str | tuple):
            return {self.arg} if isinstance(self.arg, str) else set(self.arg)
        node = self.node if self.node is not None else getattr(self.fn, "node", None)
        if node is None or getattr(self.fn, "mode", "columnar") != "columnar":
            return None
        return set(node.columns()) - {"__time"}

    def values(self, batch: EventBatch) -> pa.Array:
        if isinstance(self.arg, str):
            return batch.columns[self.arg]
        if isinstance(self.arg, tuple):
            return pair_column(self.arg, batch.columns)
        if self.node is not None:
            cols = dict(batch.columns)
            cols["__time"] = pa.array(batch.sync, pa.int64())
            return to_arrow_column(Evaluator(cols, len(batch)).eval(self.node), len(batch))
        got = self.fn.project(batch) if self.fn.mode == "columnar" else None
        return (got or self.fn.project_rows(batch))["value"]


class ArgumentValues:
    """One batch's argument columns as the kernels read them, each conversion done once per argument."""

    def __init__(self, args: list[ArgumentColumn], wanted, batch: EventBatch):
        self.cols = {a: arg.values(batch) for a, arg in enumerate(args) if a in wanted}
        self._floats: dict[int, np.ndarray] = {}
        self._valid: dict[int, np.ndarray | None] = {}
        self._inf: dict[int, np.ndarray | None] = {}

    def floats(self, a: int) -> np.ndarray:
        """The values as float64, nulls as NaN (times and dates as their integer ticks)."""
        if a not in self._floats:
            col = self.cols[a]
            if _orderable_as_int(col.type):
                col = col.view(pa.int64()) if col.type.bit_width == 64 else _as_int64(col)
            if not pa.types.is_float64(col.type):
                col = col.cast(pa.float64(), safe=False)  # big integers: the nearest float, as numpy would
            if col.null_count:
                col = col.fill_null(np.nan)
            self._floats[a] = np.asarray(col.to_numpy(zero_copy_only=False))
        return self._floats[a]

    def order_keys(self, a: int) -> np.ndarray:
        """The values as int64 keys that sort as the values do (nulls as 0; ``valid`` says which count):
        integers, times and dates as themselves (exact beyond 2**53), floats by their bits."""
        col = self.cols[a]
        if float_keyed(col.type):
            return float_keys(self.floats(a))
        if _orderable_as_int(col.type):
            col = col.view(pa.int64()) if col.type.bit_width == 64 else _as_int64(col)
        elif not pa.types.is_int64(col.type):
            col = col.cast(pa.int64())
        return as_numpy(col.fill_null(0) if col.null_count else col)

    def valid(self, a: int) -> np.ndarray | None:
        """Which values count (not null, not NaN: NaN counts as null for aggregates); None when all do."""
        if a not in self._valid:
            col = self.cols[a]
            ok = None if col.null_count == 0 else np.asarray(col.is_valid().to_numpy(zero_copy_only=False))
            if pa.types.is_floating(col.type):
                nan = np.isnan(self.floats(a))
                if nan.any():
                    ok = ~nan if ok is None else ok & ~nan
            self._valid[a] = ok
        return self._valid[a]

    def ints(self, a: int) -> np.ndarray:
        """The values as int64, nulls as 0."""
        col = self.cols[a]
        try:
            vals = col.cast(pa.int64()) if not pa.types.is_int64(col.type) else col
        except pa.ArrowInvalid as exc:  # a UBIGINT above 2**63 - 1: DuckDB sums it as a HUGEINT
            raise SumOverflowError(
                f"an aggregate of {col.type} values above BIGINT's maximum (2**63 - 1) is not supported"
            ) from exc
        return as_numpy(vals.fill_null(0) if vals.null_count else vals)

    def finite_floats(self, a: int) -> np.ndarray:
        """What each event adds to a sum of finite values: its value, 0 where it does not count or is infinite
        (the infinities are counted apart where values leave a sum, see ``compiled.with_infinities``)."""
        f = self.summed_floats(a, False)
        return f if self.infinities(a) is None else np.where(np.isinf(f), 0.0, f)

    def infinities(self, a: int) -> np.ndarray | None:
        """Each event's infinity, packed as a count: 1 for +inf, ``INF_NEG`` for -inf, else 0 (their sums
        over a group hold both counts while fewer than 2**32 values are alive); None when the batch has none."""
        if a not in self._inf:
            f = self.floats(a)
            inf = np.isinf(f)
            self._inf[a] = None
            if inf.any():
                self._inf[a] = np.where(inf, np.where(f > 0, 1, INF_NEG), 0).astype(np.int64)
        return self._inf[a]

    def summed_floats(self, a: int, square: bool) -> np.ndarray:
        """What each event adds to a float sum: its value (or square), 0 where it does not count."""
        ok = self.valid(a)
        f = self.floats(a) if ok is None else np.where(ok, self.floats(a), 0.0)
        return f * f if square else f


INF_NEG = 1 << 32  # a -inf's count in a packed infinity count (+inf: 1)


def _numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)


def float_keyed(t: pa.DataType) -> bool:
    """Whether order keys of ``t`` are float bits (floats, and uint64, which int64 cannot hold)."""
    return pa.types.is_floating(t) or pa.types.is_uint64(t)


def float_keys(values: np.ndarray) -> np.ndarray:
    """Order-preserving int64 keys of float64 values (NaN excluded by the caller; -0.0 is 0.0)."""
    bits = (values + 0.0).view(np.int64)
    return np.where(bits < 0, bits ^ _FLIP, bits)


def key_floats(keys: np.ndarray) -> np.ndarray:
    """The float64 values of ``float_keys``."""
    return np.where(keys < 0, keys ^ _FLIP, keys).view(np.float64)


def _orderable_as_int(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t)


def _mask(missing: np.ndarray) -> np.ndarray | None:
    """A null mask for ``pa.array``, or None when nothing is missing (no bitmap to build)."""
    return missing if missing.any() else None


class _Engine:
    """Shared interface of the compiled and the Python aggregation engines."""

    # results computed only at end of input (the Python engine's start-edge variant honours it)
    final_only = False

    def run(self, batch: EventBatch, gids: np.ndarray, upto: int):
        """Returns (sync, other, gid, {field: array}) of the output events."""
        raise NotImplementedError

    def snapshot(self) -> dict:
        raise NotImplementedError

    def restore(self, state: dict) -> None:
        raise NotImplementedError


def _as_int64(col: pa.Array) -> pa.Array:
    """A narrower integer-like column (a DATE is 32 bits) as int64: its bits read as a signed integer."""
    if pa.types.is_integer(col.type):
        return col.cast(pa.int64())
    return col.view(getattr(pa, f"int{col.type.bit_width}")()).cast(pa.int64())

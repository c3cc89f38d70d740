import numpy as np, pyarrow as pa, tidal
from tidal import tx
acc = tx.Table("accounts", 10, {"balance": np.full(10, 100, dtype=np.int64)})
def access(e, t):
    t.read_modify(acc, e.src, "balance", lambda v: v - e.amount, condition=lambda v: v >= e.amount)
    t.read_modify(acc, e.dst, "balance", lambda v: v + e.amount)
    t.read(acc, e.dst, "balance", name="after")
data = pa.table({"t": np.arange(20), "src": np.arange(20) % 10, "dst": (np.arange(20) * 3 + 1) % 10, "amount": np.arange(20) * 10})
s = tidal.from_arrow(data, time="t").transact(access, post=lambda e, r: {"ok": r.committed, "after": r.after}, interval=4)
print(s.to_arrow().to_pandas().head(20))
print(acc["balance"])
print(s.explain())
acc2 = tx.Table("accounts", 10, {"balance": np.full(10, 100, dtype=np.int64)})
import importlib

import time, sys
from tidal.tx.apps import APPS
app = sys.argv[1]; n = int(sys.argv[2])
mod = APPS[app]
data = mod.generate(n, partitions=2)
for sched in ["serial", "chains", "lock", "pat"]:
    for w in [1, 2]:
        tabs = mod.tables()
        s = mod.stream(data, tabs, scheduler=sched, workers=w)
        s.count()
        tabs = mod.tables()
        s = mod.stream(data, tabs, scheduler=sched, workers=w)
        t0 = time.perf_counter(); s.count(); dt = time.perf_counter() - t0
        print(app, sched, w, f"{n/dt:,.0f} ev/s")
tabs = mod.tables(); t0 = time.perf_counter(); mod.python(data, tabs); dt = time.perf_counter()-t0
print(app, "python", f"{n/dt:,.0f} ev/s")
import re
eng = None

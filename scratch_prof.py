import time, sys, cProfile, pstats
from tidal.tx.apps import APPS
app = sys.argv[1]; n = int(sys.argv[2]); sched = sys.argv[3]
mod = APPS[app]
data = mod.generate(n, partitions=2)
tabs = mod.tables(); mod.stream(data, tabs, scheduler=sched, workers=1).count()
tabs = mod.tables(); s = mod.stream(data, tabs, scheduler=sched, workers=1)
cProfile.run("s.count()", "/tmp/prof")
pstats.Stats("/tmp/prof").sort_stats("cumulative").print_stats(25)
print(s.explain())

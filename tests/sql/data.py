"""Small files in every input format for the golden SQL suite (deterministic)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

ORDERS = """id,customer,qty,price,discount,note,ts
1,alice,3,9.5,0.1,rush,2024-03-01 09:15:00
2,bob,1,19.0,,,2024-03-01 10:05:00
3,carol,5,4.25,0.2,gift,2024-03-01 10:45:30
4,alice,2,12.0,,,2024-03-01 11:20:00
5,dave,7,3.0,0.05,bulk,2024-03-01 12:00:00
6,bob,4,25.5,0.15,,2024-03-01 12:30:00
7,erin,1,99.99,,vip,2024-03-01 13:10:00
8,carol,2,15.0,0.3,,2024-03-01 13:55:00
9,alice,6,7.75,,gift,2024-03-01 14:40:00
10,frank,3,11.0,0.0,,2024-03-01 15:05:00
"""
CUSTOMERS = """name,city,vip
alice,Lisbon,true
bob,Oslo,false
carol,Lisbon,true
gina,Rome,false
"""


def write_files(d: Path) -> None:
    (d / "orders.csv").write_text(ORDERS)
    (d / "customers.csv").write_text(CUSTOMERS)
    orders = pv.read_csv(d / "orders.csv")
    orders = orders.set_column(6, "ts", orders.column("ts").cast(pa.timestamp("us")))
    pq.write_table(orders, d / "orders.parquet")
    with ipc.new_file(d / "orders.arrow", orders.schema) as w:
        w.write_table(orders)
    (d / "cities.tsv").write_text("city\tpop\nLisbon\t545\nOslo\t709\nTiny\t12\n")
    events = [{"user": f"u{i % 3}", "score": i % 5, "at": f"2024-03-01T10:0{i}:00"} for i in range(8)]
    (d / "events.json").write_text("".join(json.dumps(e) + "\n" for e in events))
    (d / "pipes.txt").write_text("a|b\n1|x\n2|y\n3|z\n")

"""The loop the daemon drivers share (run inside their containers, python3 stdlib only): inject
each fault many times in a seeded random order and print, per injection, the fault and the lines
each log gained meanwhile (one JSON object a line)."""

import json
import os
import random
import time


def drive(logs, faults, seed, start):
    """``logs``: name -> path; ``faults``: name -> (injections, how(rng)); ``start()`` starts
    the daemons (what they log meanwhile is the ``startup`` injection's)."""
    for path in logs.values():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "a").close()
    at = {name: os.path.getsize(path) for name, path in logs.items()}
    start()
    time.sleep(0.3)
    r = random.Random(seed)
    order = [name for name, (n, _) in faults.items() for _ in range(n)]
    r.shuffle(order)
    for fault in ["startup", *order]:
        if fault != "startup":
            faults[fault][1](r)
        time.sleep(0.05)
        gained = {}
        for name, path in logs.items():
            with open(path, "rb") as f:
                f.seek(at[name])
                data = f.read()
            at[name] += len(data)
            gained[name] = data.decode("utf-8", "replace")
        print(json.dumps({"fault": fault, "logs": gained}), flush=True)

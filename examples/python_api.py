"""ccopt from Python: build CoCoNeT's SGD step with the front end, schedule it, check the
schedule on 4 simulated ranks, and predict its time (`python examples/python_api.py`)."""

import numpy as np

import ccopt
from ccopt.frontend import P, Program, R

p = Program("sgd", dp=4)
g = p.input("g", [1030], "f32", P())  # per-rank gradients: their sum is the gradient
w = p.input("w", [1030], "f32", R)
lr = p.input("lr", [], "f32", R)
g_sum = p.all_reduce(g, "dp")
p.update(w, w - lr * g_sum)

before = ccopt.run(p, {"g": np.ones(1030, np.float32), "w": np.zeros(1030, np.float32), "lr": 0.5})
print("w after one step:", before.outputs["w"][:3])  # -0.5 * 1 (the inputs are global values)

rs, ag = p.split(g_sum)  # all_reduce -> reduce_scatter + all_gather
p.reorder(ag)  # the update runs on each rank's slice
check = p.check()  # the interpreter: before == after on random inputs, every output
print(check)
assert check.ok
print(p)
report = ccopt.simulate(p, machine="dgx-a100")
print(f"predicted step: {report.step_time_ns} ns")

"""A Python front end in CoCoNeT's style: write the program, then schedule it.

```python
from ccopt.frontend import Program, P, R

p = Program("sgd", dp=4)
g = p.input("g", [1030], "f32", P())        # per-rank gradients (partial sums)
w = p.input("w", [1030], "f32", R)
lr = p.input("lr", [], "f32", R)
g1 = p.all_reduce(g, "dp")
p.update(w, w - lr * g1)

rs, ag = p.split(g1)                         # all_reduce -> reduce_scatter + all_gather
p.reorder(ag)                                # compute the update on slices
p.fuse(rs, *p.slice_compute(rs))             # one fused collective
print(p)                                     # the IR
p.check()                                    # interpreter: before == after on random inputs
```
Every schedule step is one of ccopt's passes applied to the chosen ops (through tags), so what
the front end does is exactly what `ccopt -p` does.
"""

from ccopt.dialects.dtensor_type import P, R, S, V
from ccopt.frontend.program import Program, Tensor

__all__ = ["Program", "Tensor", "P", "R", "S", "V"]

#!/usr/bin/env python3
"""Jaxley and neurosolve on the same discrete equations: a real morphology in
Jaxley's form, NEURON's hh (as Jaxley's HH channel), and the gradient of one
loss with respect to the same parameters (docs/gradients.md, "Against Jaxley").

The same equations. Jaxley cuts a cell into branches of ncomp cylinders
(radius and length per compartment) and couples neighbours through the two
half-cylinders (g = r1 r2^2 / (Ra (L1 r2^2 + L2 r1^2) L1)), and the branches at a
branch point through a node without membrane: NEURON's segments of a
cylindrical section with nseg = ncomp, its zero-area node at x = 1 (kept where
3 or more compartments meet) and Ra (L/2) / (pi r^2) per half segment. So the
morphology is written with one radius per unbranched section (the mean over its
length of the file's radii, each child's first 3-D point given that radius by
`swc:ID.start_diam`: Import3d would give it the parent's), every point of SWC
type 3, and the soma as a cylinder of length and diameter 2 r (r: the root's
radius) with the file's root children at its end; the arc lengths of the
file's points are kept. Jaxley's cell is built from the same sections
(jx.Cell of jx.Branch with that radius and L / ncomp per compartment).

The same step. Jaxley's step updates the gates first, with v^n (exponential
Euler: x e + x_inf (1 - e), e = exp(-dt / tau)), then linearises the current
at v^n with the same 0.001 mV difference as NEURON's current() and solves
backward Euler for v^{n+1}. NEURON computes the currents at v^n, solves, and
then updates the gates with v^{n+1} (cnexp: the same exponential update). From
gates at their steady state at v_init (Jaxley's init_states, NEURON's INITIAL),
Jaxley's first gate update leaves them there (to rounding), and from then on
both sequences are the same: v^n equal to rounding. Jaxley's HH is NEURON's hh
at celsius = 6.3 (q10 = 1; the same rates with vtrap, gl 3e-4, el -54.3,
ena 50, ek -77, mA/cm^2), with usetable_hh = 0 here. The clamp is on for the
whole run (so no step lands on its edge).

The loss: L = sum over the recorded sites and samples (sample 0 is v_init) of
(v - TARGET)^2. The parameters: one value each for the whole cell (Jaxley's
cell-level make_trainable; neurosolve's `all:NAME`): gNa, gK, gLeak, cm, Ra;
and one value for one section (Jaxley's branch(k).make_trainable, neurosolve's
`swc:ID:NAME`): eLeak (el_hh) of the soma and of the last section.

usage: jaxley_grad.py --write-reference DIR     (the stored case of tests/grad/test_grad_jaxley.py)
Writes DIR/cell.swc, DIR/params.txt, DIR/model.txt and DIR/reference.json
(Jaxley's version, the command, its loss, gradient and traces).
"""
import argparse
import collections
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Jaxley's parameter name and neurosolve's (`bench grad --param`, WHERE:NAME): one value for the whole
# cell (Jaxley's cell-level make_trainable)
PARAMS = [("HH_gNa", "gnabar_hh"), ("HH_gK", "gkbar_hh"), ("HH_gLeak", "gl_hh"),
          ("capacitance", "cm"), ("axial_resistivity", "Ra")]
# and one value per section (Jaxley's branch(k).make_trainable): the leak's reversal of the soma and of
# the last section
BRANCH_PARAMS = [("HH_eLeak", "el_hh", 0), ("HH_eLeak", "el_hh", -1)]
MODEL = "all.insert = hh\nglobal.usetable_hh = 0\n"


class Case:
    """A case: a morphology in Jaxley's form and the run."""

    def __init__(self, swc, ncomp, steps, dt=0.025, ra=100.0, cm=1.0, v_init=-65.0, amp=0.5,
                 target=-60.0, sites=3):
        self.swc, self.ncomp, self.steps, self.dt = swc, ncomp, steps, dt
        self.ra, self.cm, self.v_init, self.amp, self.target = ra, cm, v_init, amp, target
        self.sections = jaxley_form(swc)
        # the soma's middle and the middles of the last compartments of the last `sites - 1` sections
        self.sites = [(0, ncomp // 2)] + [(k, ncomp - 1) for k in range(len(self.sections) - sites + 1,
                                                                          len(self.sections))]

    def write(self, folder):
        """cell.swc, params.txt, model.txt for neurosolve."""
        os.makedirs(folder, exist_ok=True)
        lines = ["# " + os.path.basename(self.swc) + " in Jaxley's form (validation/jaxley_grad.py): one radius"
                 " per section, the soma a cylinder of length and diameter 2 r, every point type 3"]
        params = ["# validation/jaxley_grad.py: the run of the Jaxley comparison",
                  f"dt = {self.dt!r}", "celsius = 6.3", f"v_init = {self.v_init!r}", f"Ra = {self.ra!r}",
                  f"all.cm = {self.cm!r}", f"all.nseg = {self.ncomp}"]
        next_id = 1
        end_id = {}
        for k, s in enumerate(self.sections):
            ids = []
            for (x, y, z) in s["points"]:
                parent = end_id[s["parent"]] if not ids and s["parent"] >= 0 else (ids[-1] if ids else -1)
                lines.append(f"{next_id} 3 {x!r} {y!r} {z!r} {s['radius']!r} {parent}")
                ids.append(next_id)
                next_id += 1
            end_id[k] = ids[-1]
            s["first_id"] = ids[0]
            if s["parent"] >= 0:
                params.append(f"swc:{ids[0]}.start_diam = {2 * s['radius']!r}")
        with open(os.path.join(folder, "cell.swc"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(folder, "params.txt"), "w") as f:
            f.write("\n".join(params) + "\n")
        with open(os.path.join(folder, "model.txt"), "w") as f:
            f.write(MODEL)

    def locations(self):
        """neurosolve's locations of the sites (the clamp is the first)."""
        return [f"swc:{self.sections[k]['first_id']}({(j + 0.5) / self.ncomp!r})" for k, j in self.sites]

    def bench_args(self, folder):
        locs = self.locations()
        a = ["--morph", os.path.join(folder, "cell.swc"), "--params", os.path.join(folder, "params.txt"),
             "--model", os.path.join(folder, "model.txt"), "--steps", str(self.steps),
             "--iclamp", f"{locs[0]}:0:1e9:{self.amp!r}", "--target", repr(self.target)]
        for loc in locs:
            a += ["--record", loc]
        for p in self.params():
            a += ["--param", p]
        return a

    def params(self):
        """neurosolve's parameters (WHERE:NAME), in Jaxley's order (cell.get_parameters())."""
        out = [f"all:{n}" for _, n in PARAMS]
        for _, n, k in BRANCH_PARAMS:
            out.append(f"swc:{self.sections[k]['first_id']}:{n}")
        return out


def jaxley_form(path):
    """The sections of an SWC file: [{points, radius, parent}], parents first;
    section 0 is the soma cylinder."""
    pts = {}
    with open(path) as f:
        for line in f:
            line = line.split("#")[0].split()
            if line:
                pts[int(line[0])] = (int(line[1]), float(line[2]), float(line[3]), float(line[4]),
                                     float(line[5]), int(line[6]))
    children = collections.defaultdict(list)
    for i in sorted(pts):
        children[pts[i][5]].append(i)
    root = children[-1][0]
    xyz = lambda i: pts[i][1:4]
    r0 = pts[root][4]
    x0, y0, z0 = xyz(root)
    sections = [{"points": [(x0 - 2 * r0, y0, z0), (x0, y0, z0)], "radius": r0, "parent": -1}]
    # the root's children that are not soma points, and the children of the soma's other points
    starts = []
    stack = [root]
    while stack:
        i = stack.pop()
        for c in children[i]:
            (stack if pts[c][0] == 1 else starts).append(c)
    todo = [(c, 0, root) for c in starts]
    while todo:
        c, parent, from_point = todo.pop(0)
        chain = [from_point, c]
        while len(children[chain[-1]]) == 1:
            chain.append(children[chain[-1]][0])
        length = area = 0.0
        for a, b in zip(chain, chain[1:]):
            d = math.dist(xyz(a), xyz(b))
            length += d
            area += d * 0.5 * (pts[a][4] + pts[b][4])
        radius = area / length if length > 0 else pts[c][4]
        sections.append({"points": [xyz(i) for i in chain[1:]], "radius": radius, "parent": parent,
                         "length": length})
        k = len(sections) - 1
        todo += [(g, k, chain[-1]) for g in children[chain[-1]]]
    sections[0]["length"] = 2 * r0
    return sections


def jaxley_cell(case):
    """Jaxley's cell of the case (x64), with HH everywhere and the clamp and recordings."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import jaxley as jx
    from jaxley.channels import HH
    comp = jx.Compartment()
    branches = [jx.Branch(comp, ncomp=case.ncomp) for _ in case.sections]
    cell = jx.Cell(branches, parents=[s["parent"] for s in case.sections])
    for k, s in enumerate(case.sections):
        cell.branch(k).set("length", s["length"] / case.ncomp)
        cell.branch(k).set("radius", s["radius"])
    cell.set("axial_resistivity", case.ra)
    cell.set("capacitance", case.cm)
    cell.insert(HH())
    cell.set("v", case.v_init)
    cell.init_states(delta_t=case.dt)
    t_max = case.steps * case.dt
    k, j = case.sites[0]
    cell.delete_stimuli()
    cell.branch(k).comp(j).stimulate(jx.step_current(0.0, 2 * t_max, case.amp, case.dt, t_max), verbose=False)
    cell.delete_recordings()
    for k, j in case.sites:
        cell.branch(k).comp(j).record("v", verbose=False)
    for name, _ in PARAMS:
        cell.make_trainable(name, verbose=False)
    for name, _, k in BRANCH_PARAMS:
        cell.branch(k % len(case.sections)).make_trainable(name, verbose=False)
    return cell


def jaxley_gradient(g):
    """The gradient's values in Jaxley's order (a list of one-entry dicts)."""
    names = [n for n, _ in PARAMS] + [n for n, _, _ in BRANCH_PARAMS]
    return [float(g[k][name].reshape(-1)[0]) for k, name in enumerate(names)]


def jaxley_functions(case, cell):
    """simulate(params) -> recordings (sites x samples), loss(params) -> L."""
    import jax.numpy as jnp
    import jaxley as jx

    def simulate(params):
        v = jx.integrate(cell, params=params, delta_t=case.dt, t_max=case.steps * case.dt)
        return v[:, :case.steps + 1]

    def loss(params):
        return jnp.sum((simulate(params) - case.target) ** 2)
    return simulate, loss


def jaxley_reference(case):
    import jax
    import jaxley
    cell = jaxley_cell(case)
    params = cell.get_parameters()
    simulate, loss = jaxley_functions(case, cell)
    v = jax.jit(simulate)(params)
    L, g = jax.jit(jax.value_and_grad(loss))(params)
    return {"jaxley": jaxley.__version__, "jax": jax.__version__, "loss": float(L), "gradient": jaxley_gradient(g),
            "params": case.params(), "traces": [[float(x) for x in row] for row in v]}


# the stored case of tests/grad/test_grad_jaxley.py: a small real cell, 10 ms
TEST_CASE = dict(swc=os.path.join(ROOT, "data", "morphologies", "ca1_ko20x-07.swc"), ncomp=3, steps=400)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-reference", metavar="DIR", required=True)
    a = ap.parse_args()
    a.write_reference = os.path.abspath(a.write_reference)
    case = Case(**TEST_CASE)
    case.write(a.write_reference)
    ref = jaxley_reference(case)
    ref["command"] = "python3 validation/jaxley_grad.py --write-reference " + os.path.relpath(
        a.write_reference, ROOT)
    ref["case"] = {k: (os.path.relpath(v, ROOT) if k == "swc" else v) for k, v in TEST_CASE.items()}
    ref["bench_args"] = case.bench_args(".")  # run in DIR
    with open(os.path.join(a.write_reference, "reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print(json.dumps({k: ref[k] for k in ("jaxley", "loss", "gradient")}))


if __name__ == "__main__":
    sys.exit(main())

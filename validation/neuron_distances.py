"""NEURON's path distance from the soma's middle to every segment of a morphology.

Loads an SWC file through Import3d (as validation/neuron_sim_compare.py does:
Ra 35.4, cm 1, nseg per section by the d_lambda rule, 0.1 at 100 Hz) and
prints one line per segment: the SWC id of the section's first own point
(the key of ns_section_info.first_point_id), the segment's x and
h.distance(root(0.5), seg) [um], the root being Import3d's first section.
tests/mech/test_sim_model.c compares the distances of model expressions in d
(ns_sim_model_resolve) with this output (tests/data/neuron_distances/).

Usage: python3 validation/neuron_distances.py FILE.swc > tests/data/neuron_distances/NAME.csv
"""
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    from neuron import h
    h.load_file("stdlib.hoc")
    h.load_file("import3d.hoc")
    reader = h.Import3d_SWC_read()
    reader.quiet = 1
    reader.input(path)
    gui = h.Import3d_GUI(reader, 0)
    gui.instantiate(None)
    byname = {sec.name(): sec for sec in h.allsec()}
    secs = []  # (key, section) in Import3d order
    for i in range(int(reader.sections.count())):
        isec = reader.sections.object(i)
        if isec.is_subsidiary:
            continue
        ref = h.ref("")
        gui.name(isec, ref)
        nm = ref[0] if "[" in ref[0] else ref[0] + "[0]"
        if nm not in byname:
            continue  # removed by chk_valid
        secs.append((int(reader.id.x[int(isec.id)]), byname[nm]))
    for sec in h.allsec():
        sec.Ra = 35.4
        sec.cm = 1.0
        try:  # NEURON's d_lambda rule; lambda_f divides by zero on zero-length sections
            sec.nseg = int((sec.L / (0.1 * h.lambda_f(100, sec=sec)) + 0.9) / 2) * 2 + 1
        except RuntimeError:
            sec.nseg = 1
    root = secs[0][1]
    version = h.nrnversion(5) if hasattr(h, "nrnversion") else "?"
    print(f"# validation/neuron_distances.py {os.path.basename(path)}: NEURON {version}, Import3d, "
          f"d_lambda 0.1 at 100 Hz (Ra 35.4, cm 1); h.distance(root(0.5), seg)")
    print("first_point_id,x,distance")
    for key, sec in secs:
        for seg in sec:
            print(f"{key},{seg.x:.17g},{h.distance(root(0.5), seg):.17g}")


if __name__ == "__main__":
    main()

"""NEURON's section names of SWC files, with the SWC id where each section starts.

Loads each file through Import3d (validation/neuron_model_compare.py's
build_cell) and prints one line per section: the file's name, NEURON's name
(soma[0], axon[3], dend[12], apic[40], dend_16[2], ...) and the SWC id of the
section's first own point (the key of ns_section_info.first_point_id).
tests/test_locations.py checks `neurosolve morph FILE --sections` (ns_section_name)
against this output (tests/data/neuron_section_names.csv).

Usage: python3 validation/neuron_section_names.py FILE.swc... > tests/data/neuron_section_names.csv
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    import neuron
    from neuron import h
    from neuron_model_compare import build_cell
    print(f"# NEURON {neuron.__version__}: python3 validation/neuron_section_names.py "
          + " ".join(os.path.relpath(f) for f in sys.argv[1:]))
    print("file,name,first_point_id")
    for path in sys.argv[1:]:
        secs, keep = build_cell(h, path)
        for first_id, _, sec in secs:
            print(f"{os.path.basename(path)},{sec.name()},{first_id}")
        del keep
        for s in list(h.allsec()):
            h.delete_section(sec=s)


if __name__ == "__main__":
    main()

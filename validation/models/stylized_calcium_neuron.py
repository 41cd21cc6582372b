"""A stylised cell for the capture of ion styles and cm (tests/data/neuron_import/): a soma and
an apical trunk with hh, pas, Ca_HVA, SK_E2 and calcium accumulation (CaDynamics_E2, BBP's,
data/mechanisms/bbp), two basal dendrites with pas only. The trunk keeps NEURON's default
calcium style (cai a state, eca by Nernst at every step); the soma sets
`ion_style("ca_ion", 0, 1, 0, 0, 0)` as Mainen and Sejnowski 1996 do (eca a parameter, 120 mV,
although CaDynamics_E2 writes cai: neurosolve's eca_fixed). cm differs between the basal
dendrites (one region) and along the trunk (per segment); gCa_HVAbar rises along the trunk.
Built with `--mod data/mechanisms/bbp/Ca_HVA.mod --mod data/mechanisms/bbp/SK_E2.mod
--mod data/mechanisms/bbp/CaDynamics_E2.mod`. A setup file for
validation/neuron_import_compare.py (`h` given)."""
h.load_file("stdrun.hoc")  # noqa: F821
soma = h.Section(name="soma")  # noqa: F821
soma.L = soma.diam = 20.0
trunk = h.Section(name="apic[0]")  # noqa: F821
trunk.L, trunk.diam, trunk.nseg = 400.0, 2.5, 9
trunk.connect(soma(1))
basal = []
for k, (L, n) in enumerate(((150.0, 5), (200.0, 7))):
    s = h.Section(name=f"dend[{k}]")  # noqa: F821
    s.L, s.diam, s.nseg = L, 2.5, n
    s.connect(soma(0))
    basal.append(s)
for s in h.allsec():  # noqa: F821
    s.Ra = 120.0
    s.insert("pas")
    s.g_pas, s.e_pas = 4e-5, -70.0
basal[0].cm, basal[1].cm = 1.0, 2.0
for k, seg in enumerate(trunk):
    seg.cm = 1.0 + 0.1 * k
for s in (soma, trunk):
    s.insert("hh")
    s.insert("Ca_HVA")
    s.insert("SK_E2")
    s.insert("CaDynamics_E2")
    s.ena, s.ek = 50.0, -85.0
    s.gSK_E2bar_SK_E2 = 0.0001
    s.el_hh = -70.0
    s.decay_CaDynamics_E2, s.gamma_CaDynamics_E2 = 60.0, 0.02
soma.gCa_HVAbar_Ca_HVA = 0.0001
for seg in trunk:
    seg.gCa_HVAbar_Ca_HVA = 0.00005 + 0.0001 * seg.x
h.ion_style("ca_ion", 0, 1, 0, 0, 0, sec=soma)  # noqa: F821
soma.eca = 120.0
stim = h.IClamp(soma(0.5))  # noqa: F821
stim.delay, stim.dur, stim.amp = 20.0, 250.0, 0.8
h.celsius, h.v_init, h.dt, h.tstop = 6.3, -70.0, 0.025, 300.0  # noqa: F821

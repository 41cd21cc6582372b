"""A live NEURON model into neurosolve's files (docs/neuron_import.md).

``from_neuron(...)`` reads what a NEURON session has instantiated - sections with their 3-D
points, connections, nseg, Ra and cm, every density mechanism with each PARAMETER's value per
segment, ion values and styles, celsius, v_init, dt, tstop and the IClamps - and writes

* ``NAME.swc``: the 3-D points as NEURON holds them, one SWC point per 3-D point (a child
  section's first point, the copy of its parent's point, is the parent's SWC point), so that
  neurosolve's Import3d rules (docs/discretisation.md) rebuild NEURON's sections;
* ``NAME.params``: celsius, v_init, dt, tstop, cm per region (sections or segments that differ:
  ``cm`` statements in NAME.model), Ra, and every section's nseg as
  NEURON has it (``swc:ID.nseg``: "NEURON's nseg as recorded"), spike times by NetCon's
  convention (``netcon_spikes = 1``);
* ``NAME.model``: per section (``swc:ID``) the inserted mechanisms, each PARAMETER's value
  (``swc:ID(X).NAME`` where it varies along the section: any distribution rule comes across as
  values), ion reversal potentials or initial concentrations by NEURON's ion style;
* ``NAME.net`` (where the model has them): synapses, clamps (SEClamp, VClamp), artificial cells,
  NetStims (regular ones as trains; noisy ones, or ones with inputs, as NEURON's netstim.mod with
  each instance's Random123 ids: ``ranvar.id1=...``) and NetCons as a network file;
* ``NAME.command``: the ``neurosolve simulate`` line with the IClamps.

The written files are read back here (``ns.read_swc(...).discretize(sections=...)``) and every
section is compared with NEURON's (parent, parentx, nseg, L, area, axial resistance): a
difference is an error. What cannot be captured is never dropped: ``strict=True`` (default)
raises ``UnsupportedError`` listing it, ``strict=False`` keeps the list in ``result.not_captured``.
"""
import os
import re

from ._errors import InvalidArgumentError, UnsupportedError

# Section names -> SWC type (Import3d's names; the part after the last '.' of a template cell).
DEFAULT_TYPES = {"soma": 1, "axon": 2, "dend": 3, "apic": 4}
BUILTIN_MECHANISMS = ("pas", "hh")
SYNAPSES = ("ExpSyn", "Exp2Syn")  # neurosolve's built-in synapse types
REGION_OF_TYPE = {1: "soma", 2: "axon", 3: "basal", 4: "apical"}
# NEURON's ion style bits (nrnoc/eion.cpp): the concentration style in the low 2 bits
# (3: a state some mechanism writes), e computed at initialisation (040) and at every step (0100).
STYLE_C_STATE, STYLE_EINIT, STYLE_EADVANCE = 3, 0o40, 0o100
# NEURON keeps 3-D points and their arc lengths in single precision; neurosolve computes in double
# from the same points: short sections differ by a few 1e-6 (docs/discretisation.md, section 6).
# A section far from the origin and very short (Mainen and Sejnowski's 0.1 um spine tips at
# x = -180 um) differs by the points' own rounding: FLOAT_EPS * |coordinate| per point, relative
# to L; that bound is added to the tolerance.
GEOMETRY_RTOL = 1e-5
FLOAT_EPS = 2.0 ** -24


class NeuronImport:
    """What ``from_neuron`` captured and wrote. Attributes: ``swc``, ``model``, ``params``,
    ``command_file`` (paths, or None without ``out``); ``texts`` (the three files' text by
    kind); ``iclamps`` (``(swc_id, x, delay, dur, amp)``); ``sections`` (NEURON section name ->
    SWC id of its first point, the ``swc:ID`` key); ``not_captured`` (what could not be taken
    over); ``geometry`` (largest relative difference of L, area and resistance against NEURON);
    ``moved_to_other`` (sections written with an `other` SWC type so that an SWC file keeps them
    apart from their parent); ``translated`` (sections whose 3-D points did not start at their
    parent's connection point and were moved there, with the sections below: geometry unchanged);
    ``mechanisms`` (the density mechanisms the model needs); ``point_processes`` (the point
    process types of NAME.net); ``sources`` (NEURON object name -> NAME.net's source: NetStims'
    trains, point sources such as NetStims and IntFires, whose spikes the raster of `simulate`
    lists by source, in NAME.net's order)."""

    def __init__(self):
        self.swc = self.model = self.params = self.command_file = self.network = None
        self.texts = {}
        self.iclamps = []
        self.sections = {}
        self.not_captured = []
        self.geometry = 0.0
        self.mechanisms = []
        self.nseg = 0
        self.library = None
        self.moved_to_other = []
        self.translated = []
        self.point_processes = []
        self.sources = {}

    @classmethod
    def read(cls, prefix):
        """The files from_neuron wrote with ``out=DIR, name=NAME``: ``NeuronImport.read("DIR/NAME")``
        (NAME.swc, .model, .params and the IClamps of NAME.command), to run them without NEURON."""
        res = cls()
        prefix = str(prefix)
        res.swc, res.params, res.model = prefix + ".swc", prefix + ".params", prefix + ".model"
        res.command_file = prefix + ".command"
        if os.path.exists(prefix + ".net"):
            res.network = prefix + ".net"
        for kind, path in (("swc", res.swc), ("params", res.params), ("model", res.model),
                           ("network", res.network)):
            if path:
                with open(path) as f:
                    res.texts[kind] = f.read()
        with open(res.command_file) as f:
            words = f.read().split()
        for k, w in enumerate(words[:-1]):
            if w == "--iclamp" and words[k + 1].startswith("swc="):
                sid, x, dl, du, amp = words[k + 1][4:].split(":")
                res.iclamps.append((int(sid), float(x), float(dl), float(du), float(amp)))
            if w == "--mechanisms":
                res.library = words[k + 1]
        for line in res.texts["model"].splitlines():
            if ".insert = " in line:
                res.mechanisms += [m for m in line.split("=", 1)[1].split() if m not in res.mechanisms]
        for line in res.texts.get("network", "").splitlines():
            w = line.split()
            if len(w) >= 5 and w[0] == "synapse" and w[4] not in res.point_processes:
                res.point_processes.append(w[4])
        return res

    def command(self, neurosolve="neurosolve", mechanisms=None, extra=()):
        """The ``neurosolve simulate`` argument list that runs the written files (``mechanisms``:
        the library's path; default the one given to from_neuron, else LIB.so)."""
        mechanisms = mechanisms or self.library or "LIB.so"
        cmd = [neurosolve, "simulate"] + (["--network", self.network] if self.network else [self.swc or "NAME.swc"])
        cmd += ["--params", self.params or "NAME.params", "--model", self.model or "NAME.model"]
        if any(m not in BUILTIN_MECHANISMS + SYNAPSES for m in self.mechanisms + self.point_processes):
            cmd += ["--mechanisms", mechanisms]
        for sid, x, dl, du, amp in self.iclamps:
            cmd += ["--iclamp", f"swc={sid}:{x!r}:{dl!r}:{du!r}:{amp!r}"]
        if not self.iclamps:
            cmd += ["--iclamp", "none"]
        return cmd + list(extra)

    def simulation(self, library=None, n_cells=1, **options):
        """The simulation of the written files, built directly (IClamps added on every cell):
        ``library`` a MechanismLibrary (None: the built-in pas and hh only)."""
        from . import Model, SimParams, Simulation, read_swc
        params = SimParams()
        params.parse(self.texts["params"], self.params or "<params>")
        model = Model(library) if library is not None else Model()
        model.parse(self.texts["model"], self.model or "<model>")
        cell = read_swc(self.swc).discretize(Ra=params.to_dict()["Ra"], sections=self.texts["params"],
                                            sections_name=self.params or "<params>")
        if self.network:
            if n_cells != 1:
                raise InvalidArgumentError("NeuronImport.simulation: a model with synapses runs as its one cell")
            sim = Simulation.from_network(self.network, params=params, library=library, cells=[cell], model=model,
                                          **options)
        else:
            sim = Simulation([cell], n_cells, params=params, model=model, **options)
        index = section_index(cell)
        for c in range(n_cells):
            for sid, x, dl, du, amp in self.iclamps:
                sim.add_iclamp(c, cell.locate(index[sid], x), dl, du, amp)
        sim.init()
        return sim


def section_index(cell):
    """SWC id of a section's first point -> neurosolve section index."""
    return {cell.get_section(k)["first_point_id"]: k for k in range(cell.info["sections"])}


def _h():
    try:
        from neuron import h
    except ImportError as e:  # pragma: no cover - used only where NEURON is installed
        raise UnsupportedError("from_neuron needs NEURON (pip install neuron): " + str(e)) from None
    return h


def _selection(h, sections):
    if sections is None:
        return list(h.allsec())
    if hasattr(sections, "all") and not isinstance(sections, (list, tuple)):
        return list(sections.all)  # a template cell with an `all` SectionList
    out = list(sections)
    if out and not all(hasattr(s, "nseg") for s in out):
        raise InvalidArgumentError("from_neuron: sections must be NEURON sections, a list of them or a cell "
                                   "object with an `all` SectionList")
    return out


def _type_of(name, types):
    base = name.split(".")[-1]
    base = re.sub(r"\[\d+\]$", "", base)
    for prefix, t in types.items():
        if base == prefix or base.startswith(prefix):
            return t
    return None


def _pt3d(sec):
    return [(sec.x3d(i), sec.y3d(i), sec.z3d(i), sec.diam3d(i)) for i in range(int(sec.n3d()))]


def _pp_value(o, name):
    """A point process's PARAMETER value: NAME or an array element NAME[J]."""
    if name.endswith("]"):
        base, j = name[:-1].split("[")
        return getattr(o, base)[int(j)]
    return getattr(o, name)


def _fmt(v):
    return repr(float(v))


def _writes_concentration(h, mech, ion, cache):
    """Whether the density mechanism writes ion's concentration: NEURON raises the ion's
    concentration style to 3 (a state) where such a mechanism is inserted, so a section of its own
    with the mechanism alone shows it (the section is deleted at once)."""
    if (mech, ion) not in cache:
        probe = h.Section(name="neurosolve_from_neuron_probe")
        try:
            probe.insert(mech)
            cache[(mech, ion)] = (int(h.ion_style(ion + "_ion", sec=probe)) & 3) == STYLE_C_STATE \
                if h.ismembrane(ion + "_ion", sec=probe) else False
        finally:
            h.delete_section(sec=probe)
    return cache[(mech, ion)]


def from_neuron(sections=None, out=None, name="cell", library=None, types=None, strict=True):
    """Capture the instantiated NEURON model (all sections, a list of sections, or a cell object
    with an `all` SectionList) and write neurosolve's files to the folder ``out`` (created)
    as NAME.swc, NAME.model, NAME.params, NAME.command. ``library`` (a MechanismLibrary, or a
    path to one) checks that every inserted mechanism exists in neurosolve; ``types`` maps
    section-name prefixes to SWC types (default soma 1, axon 2, dend 3, apic 4; other names
    are type 5 and later, region `other`). Returns a NeuronImport."""
    h = _h()
    res = NeuronImport()
    miss = res.not_captured
    secs = _selection(h, sections)
    if not secs:
        raise InvalidArgumentError("from_neuron: no sections")
    tmap = dict(DEFAULT_TYPES)
    if types:
        tmap.update(types)
    if any(int(s.n3d()) < 2 for s in secs):
        h.define_shape()  # NEURON's own 3-D points for sections given by L and diam
    key = {s.hoc_internal_name(): i for i, s in enumerate(secs)}
    parent, px = [-1] * len(secs), [0.0] * len(secs)
    for i, s in enumerate(secs):
        ps = s.parentseg()
        if s.orientation() != 0.0:
            miss.append(f"{s.name()}: connected by its x = 1 end (orientation 1)")
        if ps is None:
            continue
        pk = key.get(ps.sec.hoc_internal_name())
        if pk is None:
            raise InvalidArgumentError(f"from_neuron: {s.name()}'s parent {ps.sec.name()} is not among the sections")
        parent[i], px[i] = pk, ps.x
    roots = [i for i in range(len(secs)) if parent[i] < 0]
    if len(roots) != 1:
        raise UnsupportedError("from_neuron: the sections form %d trees (%s); give one cell's sections"
                               % (len(roots), ", ".join(secs[i].name() for i in roots[:5])))
    children = [[] for _ in secs]
    for i in range(len(secs)):
        if parent[i] >= 0:
            children[parent[i]].append(i)
    # SWC types: from the names; consecutive same-type sections joined end to end would be read as one
    # section by Import3d's rules, so `other` sections alternate between types 5, 6, 7.
    stype = [0] * len(secs)
    renamed = []  # sections moved to the region `other` (cm by that region)
    start_diam = []  # (section, diameter of its first 3-D point) where Import3d's copy differs
    parentx = []  # sections attached inside their parent (0 < x < 1), not at the soma's middle
    order = []
    stack = [roots[0]]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))
    r0 = roots[0]
    soma_root = _type_of(secs[r0].name(), tmap) == 1 and int(secs[r0].n3d()) >= 2

    def mid_soma(c):  # a child at the middle of the root soma: an interior soma point (Import3d's 0.5)
        return parent[c] == r0 and soma_root and px[c] == 0.5

    def via_parentx(c):  # hung from the parent's last SWC point with `swc:ID.parentx = X`: all but x = 1,
        # the soma's middle and the first point of a soma root (Import3d's own rules give those)
        return px[c] != 1.0 and not mid_soma(c) and not (px[c] == 0.0 and parent[c] == r0 and soma_root)

    def at_end(c):  # children hung from the parent's last SWC point
        return px[c] == 1.0 or via_parentx(c)

    for i in order:
        t = _type_of(secs[i].name(), tmap)
        p_ = parent[i]
        lone = p_ >= 0 and at_end(i) and sum(at_end(c) for c in children[p_]) == 1
        if t is None or (lone and t == stype[p_]):
            # a lone child at its parent's end with the parent's type would continue the parent's
            # section in an SWC file: an `other` type (5, 6, 7 alternating along a chain) keeps it apart
            if lone and t is not None:
                renamed.append(i)
            t = 5
            if p_ >= 0 and stype[p_] >= 5:
                t = 5 + (stype[p_] - 4) % 3
        stype[i] = t
    pts = [_pt3d(s) for s in secs]
    if stype[r0] == 1 and len(pts[r0]) == 2 and any(mid_soma(c) for c in children[r0]):
        # children at the middle of a soma of two 3-D points: its midpoint (diameter interpolated,
        # so NEURON's area and resistance are unchanged) becomes the SWC point they attach to
        a, b = pts[r0]
        pts[r0] = [a, tuple((a[c] + b[c]) / 2 for c in range(4)), b]
    # SWC points
    lines, first_id, last_id, first_pt = [], [0] * len(secs), [0] * len(secs), [0] * len(secs)
    nid = [0]

    def put(p, t, par):
        nid[0] += 1
        lines.append(f"{nid[0]} {t} {_fmt(p[0])} {_fmt(p[1])} {_fmt(p[2])} {_fmt(p[3] / 2)} {par}")
        return nid[0]

    for i in order:
        s, P, t = secs[i], pts[i], stype[i]
        if parent[i] < 0:
            prev = -1
            for k, p in enumerate(P):
                prev = put(p, t, prev)
                if k == 0:
                    first_id[i] = prev
            first_pt[i] = first_id[i]
            last_id[i] = prev
            continue
        p_ = parent[i]
        x = px[i]
        PP = pts[p_]
        if x == 1.0:
            attach, at = last_id[p_], PP[-1]
        elif not via_parentx(i) and x == 0.0:
            attach, at = first_pt[p_], PP[0]
        elif not via_parentx(i) and stype[p_] == 1 and len(PP) >= 3:
            attach, at = first_pt[p_] + len(PP) // 2, None  # an interior soma point: parentx 0.5
        else:
            # elsewhere on the parent (inside it, or x = 0 of a section that is no soma root): hung from
            # its last SWC point with `swc:ID.parentx = X`, the section's geometry its own 3-D points
            # (docs/discretisation.md)
            attach, at = last_id[p_], None
            parentx.append(i)
        if at is not None and P and any(abs(P[0][c] - at[c]) > 1e-9 * max(1.0, abs(at[c])) for c in range(3)):
            # the section does not start where it is attached (its 3-D points were scaled or moved after
            # they were read, e.g. L set on a section with 3-D points): NEURON's geometry comes from each
            # section's own points, so they are moved (with the sections below) to start there
            off = [at[c] - P[0][c] for c in range(3)]
            P = pts[i] = [(p[0] + off[0], p[1] + off[1], p[2] + off[2], p[3]) for p in P]
            res.translated.append(s.name())
        own = P
        if at is not None and P and all(abs(P[0][c] - at[c]) <= 1e-9 * max(1.0, abs(at[c])) for c in range(3)):
            own = P[1:]  # the copy of the parent point (Import3d's rule)
            # Import3d gives the copy the parent point's diameter (a neurite on a soma: its own first
            # point's); a section that starts with another one says so (swc:ID.start_diam)
            copy_d = own[0][3] if own and stype[p_] == 1 and t != 1 else at[3]
            if P[0][3] != copy_d:
                start_diam.append((i, P[0][3]))
        if not own:
            miss.append(f"{s.name()}: no 3-D points of its own")
            own = P[-1:]
        prev = attach
        for k, p in enumerate(own):
            prev = put(p, t, prev)
            if k == 0:
                first_id[i] = prev
        first_pt[i] = first_id[i]
        last_id[i] = prev
    res.moved_to_other = [secs[i].name() for i in renamed]
    for i, s in enumerate(secs):
        res.sections[s.name()] = first_id[i]
        res.nseg += int(s.nseg)
    # parameters
    ra_counts = {}
    for s in secs:
        ra_counts[s.Ra] = ra_counts.get(s.Ra, 0) + 1
    ra = max(ra_counts, key=ra_counts.get)
    cm_region = {}
    p_lines = [f"# NEURON {h.nrnversion(5)} model captured by neurosolve.from_neuron (docs/neuron_import.md)",
               "all.hh = 0", "netcon_spikes = 1", f"celsius = {_fmt(h.celsius)}", f"v_init = {_fmt(h.v_init)}", f"dt = {_fmt(h.dt)}",
               f"tstop = {_fmt(h.tstop)}", f"Ra = {_fmt(ra)}"]
    # cm: per region in NAME.params (the value most segments of the region have); sections or segments
    # that differ get `swc:ID.cm` / `swc:ID(X).cm` statements in NAME.model (NEURON's cm is per segment)
    for i, s in enumerate(secs):
        counts = cm_region.setdefault(REGION_OF_TYPE.get(stype[i], "other"), {})
        for seg in s:
            counts[seg.cm] = counts.get(seg.cm, 0) + 1
    region_cm = {region: max(sorted(c), key=c.get) for region, c in cm_region.items()}
    for region in sorted(region_cm):
        p_lines.append(f"{region}.cm = {_fmt(region_cm[region])}")
    for i, d in start_diam:
        p_lines.append(f"swc:{first_id[i]}.start_diam = {_fmt(d)}")
    for i in parentx:
        p_lines.append(f"swc:{first_id[i]}.parentx = {_fmt(px[i])}")
    for i, s in enumerate(secs):
        p_lines.append(f"swc:{first_id[i]}.nseg = {int(s.nseg)}")
        if s.Ra != ra:
            p_lines.append(f"swc:{first_id[i]}.Ra = {_fmt(s.Ra)}")
    # mechanisms and ions
    lib_names = None
    if library is not None:
        from . import MechanismLibrary
        lib = library if not isinstance(library, (str, os.PathLike)) else MechanismLibrary(str(library))
        if isinstance(library, (str, os.PathLike)):
            res.library = os.path.abspath(str(library))
        lib_names = set(lib.names)
    pnames = {}
    writers = {}
    mechs_used = []
    m_lines = [f"# NEURON {h.nrnversion(5)} model captured by neurosolve.from_neuron (docs/neuron_import.md)"]
    for i, s in enumerate(secs):
        loc = f"swc:{first_id[i]}"
        segs = list(s)
        names = [m.name() for m in segs[0] if not m.is_ion()]
        ions = [m.name()[:-4] for m in segs[0] if m.is_ion()]
        for nm in names:
            if nm not in mechs_used:
                mechs_used.append(nm)
        if names:
            m_lines.append(f"{loc}.insert = {' '.join(names)}")
        cms = [seg.cm for seg in segs]
        if all(c == cms[0] for c in cms):
            if cms[0] != region_cm[REGION_OF_TYPE.get(stype[i], "other")]:
                m_lines.append(f"{loc}.cm = {_fmt(cms[0])}")
        else:
            m_lines += [f"{loc}({_fmt(seg.x)}).cm = {_fmt(c)}" for seg, c in zip(segs, cms)]
        for nm in names:
            if nm not in pnames:
                ms = h.MechanismStandard(nm, 1)
                r = h.ref("")
                lst = []
                for k in range(int(ms.count())):
                    size = int(ms.name(r, k))
                    if size != 1:
                        miss.append(f"{nm}: PARAMETER {r[0]} is an array ({size}): not captured")
                        continue
                    lst.append(r[0])
                pnames[nm] = lst
            for pn in pnames[nm]:
                vals = [getattr(seg, pn) for seg in segs]
                if all(v == vals[0] for v in vals):
                    m_lines.append(f"{loc}.{pn} = {_fmt(vals[0])}")
                else:
                    m_lines += [f"{loc}({_fmt(seg.x)}).{pn} = {_fmt(v)}" for seg, v in zip(segs, vals)]
        for ion in ions:
            style = int(h.ion_style(ion + "_ion", sec=s))
            state = (style & 3) == STYLE_C_STATE
            eadv = bool(style & STYLE_EADVANCE)
            if state and eadv:  # e by Nernst from concentrations some mechanism writes (neurosolve's rule)
                for c, g in (("i", f"{ion}i0_{ion}_ion"), ("o", f"{ion}o0_{ion}_ion")):
                    m_lines.append(f"{loc}.{ion}{c} = {_fmt(getattr(h, g))}")
            elif not state and not eadv and not (style & STYLE_EINIT):
                # e a parameter; where an inserted mechanism writes the concentration anyway (the model set
                # the style, e.g. ion_style("ca_ion", 0, 1, 0, 0, 0)), e stays: eX_fixed
                fixed = any(_writes_concentration(h, nm, ion, writers) for nm in names)
                for field in ("e" + ion, ion + "i", ion + "o"):
                    vals = [getattr(seg, field) for seg in segs]
                    key = field + ("_fixed" if fixed and field[0] == "e" else "")
                    if all(v == vals[0] for v in vals):
                        m_lines.append(f"{loc}.{key} = {_fmt(vals[0])}")
                    else:
                        m_lines += [f"{loc}({_fmt(seg.x)}).{key} = {_fmt(v)}" for seg, v in zip(segs, vals)]
            elif not state and not eadv:  # a concentration read: e by Nernst at finitialize (einit), ours too
                for field in (ion + "i", ion + "o"):
                    vals = [getattr(seg, field) for seg in segs]
                    if all(v == vals[0] for v in vals):
                        m_lines.append(f"{loc}.{field} = {_fmt(vals[0])}")
                    else:
                        m_lines += [f"{loc}({_fmt(seg.x)}).{field} = {_fmt(v)}" for seg, v in zip(segs, vals)]
            else:
                miss.append(f"{s.name()}: ion {ion} style {style:o} (octal): neurosolve computes e by Nernst "
                            f"where a mechanism writes the concentration (every step) or reads it (at finitialize)")
    res.mechanisms = mechs_used
    if lib_names is not None:
        for nm in mechs_used:
            if nm not in lib_names and nm not in BUILTIN_MECHANISMS:
                miss.append(f"mechanism {nm}: not in the mechanism library")
            elif nm in lib_names and any(f.startswith("__ran_") and f.endswith("_id1") and f != "__ran_id1"
                                         for f in lib.describe(nm)["assigned"]):
                miss.append(f"mechanism {nm}: RANDOM variables in a density mechanism: NEURON's streams per "
                            f"instance are not captured (neurosolve's defaults draw others)")
    # GLOBALs: those the library declares (and hh's usetable), at NEURON's values
    for nm in mechs_used:
        names = ["usetable"] if nm == "hh" else []
        if lib_names is not None and nm in lib_names:
            names = list(lib.describe(nm)["globals"])
        for g in names:
            full = g if g.endswith("_" + nm) else f"{g}_{nm}"
            if hasattr(h, full):
                m_lines.append(f"global.{full} = {_fmt(getattr(h, full))}")
    # point processes, network objects, callbacks
    secset = {s.hoc_internal_name(): i for i, s in enumerate(secs)}
    for ic in h.List("IClamp"):
        seg = ic.get_segment()
        if seg is None or seg.sec.hoc_internal_name() not in secset:
            continue
        res.iclamps.append((first_id[secset[seg.sec.hoc_internal_name()]], seg.x, ic.delay, ic.dur, ic.amp))
    # synapses (point processes with NET_RECEIVE that neurosolve has), NetStims, NetCons -> NAME.net
    syn_types = set(SYNAPSES) | ({n for n in lib_names if lib.describe(n)["kind"] != "density"}
                                 if lib_names is not None else set())
    mt = h.MechanismType(1)
    r = h.ref("")
    synapses, stims = {}, {}  # hoc object name -> network line name
    net_lines = []
    targets = {nc.syn().hname() for nc in h.List("NetCon") if nc.syn() is not None}
    gix = None  # NEURON's Random123 global index (the key of every nrnran123 stream)
    for k in range(int(mt.count())):
        mt.select(k)
        mt.selected(r)
        kind = r[0]
        if kind == "IClamp":
            continue
        objs = list(h.List(kind))
        if not objs:
            continue
        if kind == "NetStim":  # a regular train without inputs: its times; else NEURON's netstim.mod
            rest = []
            for o in objs:
                if o.noise != 0 or o.hname() in targets:
                    if kind in syn_types:
                        rest.append(o)
                    else:
                        miss.append(f"{o.hname()}: noise = {o.noise:g}{' with NetCons to it' if o.hname() in targets else ''}"
                                    f" (start {o.start:g} ms, interval {o.interval:g} ms, number {o.number:g}): "
                                    f"needs NEURON's netstim.mod in the library (data/mechanisms/events)")
                    continue
                times, t_ev = [], o.start  # NetStim.mod with noise 0: start, then + interval each time
                for _ in range(int(o.number)):
                    times.append(t_ev)
                    t_ev = t_ev + o.interval
                label = f"stim{len(stims)}"
                stims[o.hname()] = label
                net_lines.append(f"train {label} " + " ".join(_fmt(t) for t in times) if times else None)
            objs = rest
            if not objs:
                continue
        if kind not in syn_types:
            miss.append(f"{len(objs)} {kind} point process(es): not captured (IClamps, NetStims and the point "
                        f"processes of neurosolve's catalogue or the library only: NEURON's SEClamp and IntFires are "
                        f"built from data/mechanisms/electrode and events)")
            continue
        ms = h.MechanismStandard(kind, 1)
        names = []
        for q in range(int(ms.count())):
            size = int(ms.name(r, q))
            names += [f"{r[0]}[{j}]" for j in range(size)] if size > 1 else [r[0]]  # VClamp's dur[3], amp[3]
        # RANDOM variables (NEURON 9): each instance's nrnran123 stream, its ids and position
        randoms = [f[6:-4] for f in lib.describe(kind)["assigned"] if f.startswith("__ran_") and f.endswith("_id1")
                   and f != "__ran_id1"] if lib_names is not None and kind in lib_names else []
        if randoms and gix is None:
            gix = int(h.Random().Random123_globalindex())
            if gix:
                miss.append(f"Random123 global index {gix}: neurosolve's nrnran123 streams use 0 (the RANDOM draws "
                            f"of {kind} differ)")
        artificial = bool(mt.is_artificial(k))
        for o in objs:
            if artificial:  # no location in NEURON: placed at the root's middle (it reads no voltage)
                sid, x = first_id[r0], 0.5
            else:
                seg = o.get_segment()
                if seg is None or seg.sec.hoc_internal_name() not in secset:
                    continue
                sid, x = first_id[secset[seg.sec.hoc_internal_name()]], seg.x
            label = f"syn{len(synapses)}"
            synapses[o.hname()] = label
            if kind not in res.point_processes:
                res.point_processes.append(kind)
            vals = " ".join(f"{q}={_fmt(_pp_value(o, q))}" for q in names)
            for rv in randoms:  # NMODLRandom: get_ids (id1, id2, id3), get_seq (4 seq + which)
                ran = getattr(o, rv)
                ids = ran.get_ids()
                vals += "".join(f" {rv}.id{j + 1}={int(ids[j])}" for j in range(3)) + f" {rv}.seq={int(ran.get_seq())}"
            net_lines.append(f"synapse {label} imported swc:{sid}({_fmt(x)}) {kind} {vals}".rstrip())
    sources = dict(stims)  # NetCon source -> network source name: trains, point sources, detectors
    for nc in h.List("NetCon"):
        src, tgt = nc.pre(), nc.syn()
        if tgt is None:
            continue  # a spike recorder: no effect on the run
        pre = nc.preseg() if src is None else None
        key = src.hname() if src is not None else (f"v:{pre.sec.hoc_internal_name()}({pre.x!r}):{nc.threshold!r}"
                                                   if pre is not None else None)
        if key is not None and key not in sources:
            if src is not None and src.hname() in synapses:  # a point process's net_event: a point source
                sources[key] = f"src{len(sources)}"
                net_lines.append(f"source {sources[key]} {synapses[src.hname()]}")
            elif pre is not None and pre.sec.hoc_internal_name() in secset:  # a cell's voltage: a detector
                sources[key] = f"src{len(sources)}"
                sid = first_id[secset[pre.sec.hoc_internal_name()]]
                net_lines.append(f"detector {sources[key]} imported swc:{sid}({_fmt(pre.x)}) {_fmt(nc.threshold)}")
        if tgt.hname() not in synapses or key not in sources:
            miss.append(f"NetCon {src.hname() if src is not None else 'from a voltage'} -> {tgt.hname()}: "
                        f"not captured (from a NetStim, a captured point process or the cell's voltage, to a "
                        f"captured point process only)")
            continue
        if nc.wcnt() > 1:
            miss.append(f"NetCon -> {tgt.hname()}: {int(nc.wcnt())} weights, only weight[0] is taken")
        net_lines.append(f"connect {sources[key]} {synapses[tgt.hname()]} {_fmt(nc.weight[0])} "
                         f"{_fmt(nc.delay)}")
    net_lines = [ln for ln in net_lines if ln]
    res.sources = {k: v for k, v in sources.items() if not k.startswith("v:")}
    n = int(h.List("FInitializeHandler").count())
    if n:
        miss.append(f"{n} FInitializeHandler object(s): not captured")
    if int(h.CVode().active()):
        miss.append("CVode is active: neurosolve runs NEURON's fixed step (secondorder 0)")
    if int(h.secondorder):
        miss.append(f"secondorder = {int(h.secondorder)}: neurosolve runs secondorder 0")
    res.texts = {"swc": "# SWC written by neurosolve.from_neuron from NEURON's 3-D points\n" + "\n".join(lines) + "\n",
                 "params": "\n".join(p_lines) + "\n", "model": "\n".join(m_lines) + "\n"}
    if net_lines:
        res.texts["network"] = ("# NEURON's synapses, NetStims and NetCons, captured by neurosolve.from_neuron\n"
                                f"cells imported 1 {name}.swc\n" + "\n".join(net_lines) + "\n")
    if miss and strict:
        raise UnsupportedError("from_neuron: not captured:\n  " + "\n  ".join(miss))
    if out is not None:
        os.makedirs(out, exist_ok=True)
        base = os.path.join(str(out), name)
        res.swc, res.params, res.model = base + ".swc", base + ".params", base + ".model"
        if "network" in res.texts:
            res.network = base + ".net"
        for kind, path in (("swc", res.swc), ("params", res.params), ("model", res.model),
                           ("network", res.network)):
            if path:
                with open(path, "w") as f:
                    f.write(res.texts[kind])
        res.command_file = base + ".command"
        with open(res.command_file, "w") as f:
            f.write(" ".join(res.command()) + "\n")
        res.geometry = _check_geometry(h, secs, first_id, parent, px, res, strict)
    return res


def _check_geometry(h, secs, first_id, parent, px, res, strict):
    """Read the written files back and compare every section with NEURON's; differences are
    raised (strict) or added to res.not_captured."""
    from . import read_swc
    cell = read_swc(res.swc).discretize(sections=res.texts["params"], sections_name=res.params,
                                        Ra=float(re.search(r"^Ra = (\S+)$", res.texts["params"], re.M).group(1)))
    index = section_index(cell)
    worst, bad = 0.0, []
    by_id = {first_id[i]: i for i in range(len(secs))}
    if cell.info["sections"] != len(secs):
        bad.append(f"{cell.info['sections']} sections read back, NEURON has {len(secs)}")
    for sid, k in index.items():
        i = by_id.get(sid)
        if i is None:
            bad.append(f"section {k} (swc:{sid}) has no NEURON section")
            continue
        s, g = secs[i], cell.get_section(k)
        pk = index.get(first_id[parent[i]]) if parent[i] >= 0 else -1
        if g["parent"] != pk or (parent[i] >= 0 and abs(g["parent_x"] - px[i]) > 1e-12) or g["nseg"] != s.nseg:
            bad.append(f"{s.name()}: parent {g['parent']} at {g['parent_x']:g}, nseg {g['nseg']}; NEURON: "
                       f"{pk} at {px[i]:g}, nseg {int(s.nseg)}")
            continue
        area = sum(seg.area() for seg in s)
        ri = sum(seg.ri() for seg in s) + s(1).ri()
        rel = max(abs(a - b) / max(abs(b), 1e-300) for a, b in ((g["length"], s.L), (g["area"], area),
                                                                 (g["ri_sum"], ri)))
        P = _pt3d(s)
        far = max((abs(c) for p in P for c in p[:3]), default=0.0)
        tol = GEOMETRY_RTOL + 2 * FLOAT_EPS * len(P) * far / max(s.L, 1e-300)
        if rel > tol:
            bad.append(f"{s.name()}: L, area or resistance {rel:.1e} off NEURON's")
        worst = max(worst, rel)
    if bad and strict:
        raise UnsupportedError("from_neuron: the written morphology does not give NEURON's sections:\n  "
                               + "\n  ".join(bad[:20]))
    res.not_captured += ["geometry: " + b for b in bad]
    return worst

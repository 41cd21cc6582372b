: hoc's C in VERBATIM that has a meaning without hoc (neurosolve's test file, docs/mechanisms.md
: "VERBATIM"), as ModelDB's netrand.inc, presyn.inc and precall.mod write it: a structure of the
: C's own kept in a POINTER's slot (_p_sop, written by the CONSTRUCTOR through hoc_Ecalloc and
: hoc_malchk) and in a RANGE variable (link), both reached through the file's C macros (SP,
: LCAST), which name them; hoc_lookup of a hoc function that nobody defined (NULL: the call is
: skipped); the structures freed by the DESTRUCTOR. The current comes from what they hold.
NEURON {
    POINT_PROCESS vbstore
    NONSPECIFIC_CURRENT i
    RANGE gbar, e, link, i, calls
    POINTER sop
}
PARAMETER {
    gbar = 0.01 (uS)
    e = -80 (mV)
}
ASSIGNED {
    v (mV)
    i (nA)
    link
    sop
    calls
}
VERBATIM
typedef struct Store { double gs; double es; } Store;
#define SP (*((Store **)&(_p_sop)))
#define LCAST ((Store *)((unsigned long)link))
ENDVERBATIM
CONSTRUCTOR {
VERBATIM
    _p_sop = (double *)hoc_Ecalloc(1, sizeof(Store)); hoc_malchk();
    link = (double)((unsigned long)hoc_Ecalloc(1, sizeof(Store))); hoc_malchk();
ENDVERBATIM
}
DESTRUCTOR {
VERBATIM
    free(SP);
    free(LCAST);
    link = 0;
ENDVERBATIM
}
INITIAL {
    calls = 0
VERBATIM
    SP->gs = gbar;
    LCAST->es = e;
ENDVERBATIM
}
BREAKPOINT {
VERBATIM
    {
        Symbol *s = hoc_lookup("vbstore_precall");
        if (s) {
            hoc_pushx(1.0);
            hoc_call_func(s, 1);
            calls += 1;
        }
    }
ENDVERBATIM
    i = current(v)
}
FUNCTION current(v (mV)) {
VERBATIM
    _lcurrent = SP->gs * (_lv - LCAST->es);
ENDVERBATIM
}

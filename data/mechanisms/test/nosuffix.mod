: nosuffix: a file without a NEURON block (neurosolve's test file). nocmodl names
: the mechanism after the file (a density mechanism, PARAMETERs GLOBAL).
PARAMETER {
    tau = 5 (ms)
}

STATE { x }

INITIAL { x = 0 }

BREAKPOINT {
    SOLVE d METHOD cnexp
}

DERIVATIVE d {
    x' = (v + 65 - x)/tau
}

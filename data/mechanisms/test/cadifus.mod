TITLE cadifus: calcium in radial shells (NEURON's cadifus pattern)
COMMENT
neurosolve's test file in the pattern of NEURON's cadif.mod / cabpump.mod: arrays
of STATE, reactions between neighbouring elements in FROM loops (~ ca[i] <-> ca[i+1]),
COMPARTMENT i, size(i) {arrays}, a buffer per shell, the ion current as a flux into
the outer shell, cai = ca[0]. The shells' volumes are computed in INITIAL (a
PROCEDURE with a FROM loop); DEFINE gives the number of shells.
ENDCOMMENT

NEURON {
    SUFFIX cadifus
    USEION ca READ cai, ica WRITE cai
    RANGE cai0
    GLOBAL vrat
    THREADSAFE
}

DEFINE NANN 4

UNITS {
    (mM) = (milli/liter)
    (um) = (micron)
    (mA) = (milliamp)
    FARADAY = (faraday) (10000 coulomb)
    PI = (pi) (1)
}

PARAMETER {
    DCa = 0.6 (um2/ms)
    k1buf = 100 (/mM-ms)
    k2buf = 0.1 (/ms)
    TotalBuffer = 0.003 (mM)
    cai0 = 50e-6 (mM)
}

ASSIGNED {
    diam (um)
    ica (mA/cm2)
    cai (mM)
    vrat[NANN]
    frat[NANN]
}

STATE {
    ca[NANN] (mM) <1e-6>
    CaBuffer[NANN] (mM)
    Buffer[NANN] (mM)
}

BREAKPOINT {
    SOLVE state METHOD sparse
}

INITIAL {
    LOCAL B0
    factors()
    cai = cai0
    B0 = TotalBuffer/(1 + k1buf/k2buf*cai)
    FROM i = 0 TO NANN - 1 {
        ca[i] = cai
        Buffer[i] = B0
        CaBuffer[i] = TotalBuffer - B0
    }
}

PROCEDURE factors() {
    LOCAL r, dr2
    r = 1/2
    dr2 = r/(NANN - 1)/2
    vrat[0] = 0
    frat[0] = 2*r
    FROM i = 0 TO NANN - 2 {
        vrat[i] = vrat[i] + PI*(r - dr2/2)*2*dr2
        r = r - dr2
        frat[i + 1] = 2*PI*r/(2*dr2)
        r = r - dr2
        vrat[i + 1] = PI*(r + dr2/2)*2*dr2
    }
}

KINETIC state {
    COMPARTMENT i, diam*diam*vrat[i] {ca CaBuffer Buffer}
    ~ ca[0] << (-ica*PI*diam/(2*FARADAY))
    FROM i = 0 TO NANN - 2 {
        ~ ca[i] <-> ca[i + 1] (DCa*frat[i + 1], DCa*frat[i + 1])
    }
    FROM i = 0 TO NANN - 1 {
        ~ ca[i] + Buffer[i] <-> CaBuffer[i] (k1buf*diam*diam*vrat[i], k2buf*diam*diam*vrat[i])
    }
    cai = ca[0]
}

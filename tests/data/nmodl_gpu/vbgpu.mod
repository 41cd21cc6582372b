COMMENT
neurosolve's own test file (BSD-3-Clause, the project's licence): VERBATIM C in the forms that
published files write it and that build for the GPU since issue 39's last GPU blockers
(docs/mechanisms.md, "VERBATIM on the GPU"): a hoc Random's nrn_random_pick behind its handle, a
POINTER slot that the C writes (ModelDB's invlfire.mod, mynetstim.mod, ProbAMPANMDA2.mod); VecStim's
Vector calls behind its BBCOREPOINTER (vecstim.mod); the state functions of Random123 streams
(BluePyOpt's StochKv.mod); fprintf to stdout and stderr (capmax.mod); variables of the C outside the
blocks (vecst.mod's iscr). tests/nmodl/test_nmodl_cuda.c runs it on the host and the device.
ENDCOMMENT

NEURON {
    SUFFIX vbgpu
    THREADSAFE
    NONSPECIFIC_CURRENT i
    RANGE g, e, seed, force, debug, d1, d2, d3, d4, nq, index, etime
    POINTER r
    BBCOREPOINTER ptr
}

PARAMETER {
    g = 0.001 (S/cm2)
    e = -60 (mV)
    seed = 7
    force = 0
    debug = 0
}

ASSIGNED {
    v (mV)
    i (mA/cm2)
    d1
    d2
    d3
    d4
    nq
    index
    etime (ms)
    r
    ptr
}

VERBATIM
#ifndef NRN_VERSION_GTEQ_8_2_0
extern double nrn_random_pick(void* r);
extern void* nrn_random_arg(int argpos);
#define RANDCAST
#else
#define RANDCAST (Rand*)
#endif
extern double* vector_vec();
extern int vector_capacity();
extern void* vector_arg();
int *vbgpu_scr = 0x0;
unsigned int vbgpu_scrsz = 0;
ENDVERBATIM

INITIAL {
    nq = 0
    index = 0
    element()
    draws()
    VERBATIM
    if (force > 0) {
        _p_r = (void*)&_p_r; /* as hoc's setrand() would: urand() then picks from a Random */
    }
    ENDVERBATIM
}

BREAKPOINT {
    nq = nq + 1
    draws()
    i = g*(v - e)*(1 + 0.1*urand() + 0.01*(d1 + d2 + d3 + d4))
    if (debug > 0) {
    VERBATIM
        fprintf(stdout, "vbgpu: v %g nq %g\n", v, nq);
        fprintf(stderr, "vbgpu: d1 %g\n", d1);
        fflush(stdout);
    ENDVERBATIM
    }
}

FUNCTION urand() {
VERBATIM
    if (_p_r) {
        _lurand = nrn_random_pick(RANDCAST _p_r);
    } else {
        _lurand = 0.5;
    }
ENDVERBATIM
}

PROCEDURE draws() {
VERBATIM
    nrnran123_State s_ = {{0, 0, 0, 0}, {0, 0, 0, 0}, 0};
    uint32_t sq = 0;
    char wh = 0;
    nrnran123_setids(&s_, (uint32_t)seed, 2, 3);
    nrnran123_setseq(&s_, (uint32_t)nq, 1);
    d1 = nrnran123_dblpick(&s_);
    d2 = nrnran123_negexp(&s_, 2.0);
    d3 = nrnran123_normal(&s_, 0.0, 1.0);
    nrnran123_setseq(&s_, 4.0 * nq + 3.0);
    d4 = nrnran123_uniform(&s_, -1.0, 1.0) + 1e-12 * (double)nrnran123_ipick(&s_);
    nrnran123_getseq(&s_, &sq, &wh);
    d4 += 1e-3 * (sq + 0.25 * wh);
ENDVERBATIM
}

PROCEDURE element() {
VERBATIM
  { void* vv; int k, size; double* px;
    k = (int)index;
    if (k >= 0) {
        vv = (void*)(_p_ptr);
        if (vv) {
            size = vector_capacity(vv);
            px = vector_vec(vv);
            if (k < size) {
                etime = px[k];
                index += 1.;
            } else {
                index = -1.;
            }
        } else {
            index = -1.;
        }
    }
  }
ENDVERBATIM
}

PROCEDURE play() {
VERBATIM
    void** pv = (void**)(&_p_ptr);
    *pv = ifarg(1) ? vector_arg(1) : (void*)0;
ENDVERBATIM
}

PROCEDURE setrand() {
VERBATIM
    void** pv = (void**)(&_p_r);
    *pv = nrn_random_arg(1);
ENDVERBATIM
}

// neurosolve._core, the nanobind bindings of libneurosolve (docs/python.md):
// the module's entry. The families' files bind their classes and functions,
// in this order; bindings.h says how every binding treats errors, arrays and
// the GIL.
#include "bindings.h"

NB_MODULE(_core, m) {
    m.doc() = "neurosolve's C library, bound with nanobind (docs/python.md)";
    nb::register_exception_translator(nsb::translate);

    nsb::bind_library(m);
    nsb::bind_readers(m);
    nsb::bind_morph(m);
    nsb::bind_hines(m);
    nsb::bind_tridiag(m);
    nsb::bind_params(m);
    nsb::bind_mechanisms(m);
    nsb::bind_network(m);
    nsb::bind_simulation(m);
    nsb::bind_life(m);
    nsb::bind_lfp(m);
    nsb::bind_grad(m);
}

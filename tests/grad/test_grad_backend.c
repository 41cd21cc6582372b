/* Which sweep a gradient runs (docs/gradients.md, "On the GPU"), without a
 * GPU: the rule (grad_backend_choose), the CPU simulation's default, and
 * NS_BACKEND_CUDA asked for what the GPU sweep does not cover (a GLOBAL
 * parameter; in a build without CUDA, everything) refused, naming it. */
#include "check.h"
#include "load_cell.h"
#include "grad/grad_impl.h"

#include <string.h>

static ns_sim_t *sim_of(const ns_cell_t *cell, ns_sim_model_t **m) {
    const char *text = "all.insert = hh pas\n";
    CHECK_OK(ns_sim_model_create(NULL, m));
    CHECK_OK(ns_sim_model_parse(*m, text, strlen(text), "grad-backend"));
    ns_sim_params p;
    ns_sim_params_init(&p);
    ns_sim_options o;
    ns_sim_options_init(&o);
    o.backend = NS_BACKEND_CPU;
    o.model = *m;
    ns_sim_t *sim = NULL;
    CHECK_OK(ns_sim_create(1, &cell, 2, NULL, &p, &o, &sim));
    return sim;
}

int main(void) {
    /* the rule: auto takes the simulation's backend where the model is within the GPU sweep's scope */
    CHECK(grad_backend_choose(NS_BACKEND_AUTO, NS_BACKEND_CUDA, NULL) == NS_BACKEND_CUDA);
    CHECK(grad_backend_choose(NS_BACKEND_AUTO, NS_BACKEND_CUDA, "synapses") == NS_BACKEND_CPU);
    CHECK(grad_backend_choose(NS_BACKEND_AUTO, NS_BACKEND_CPU, NULL) == NS_BACKEND_CPU);
    CHECK(grad_backend_choose(NS_BACKEND_CPU, NS_BACKEND_CUDA, NULL) == NS_BACKEND_CPU);
    CHECK(grad_backend_choose(NS_BACKEND_CUDA, NS_BACKEND_CPU, NULL) == NS_BACKEND_CUDA);
    ns_cell_t *cell = test_load_cell("ca1_ko20x-07.swc", 100.0);
    CHECK(cell != NULL);
    if (!cell) return check_summary("test_grad_backend");
    ns_sim_model_t *m = NULL;
    ns_sim_t *sim = sim_of(cell, &m);
    ns_grad_t *g = NULL;
    CHECK_OK(ns_grad_create(sim, NULL, &g));
    CHECK(ns_grad_backend(g) == NS_BACKEND_CPU); /* a CPU simulation: the CPU sweep */
    ns_grad_destroy(g);
    ns_grad_options go;
    ns_grad_options_init(&go);
    go.backend = NS_BACKEND_CUDA;
    g = NULL;
    const ns_status st = ns_grad_create(sim, &go, &g);
#ifdef NS_HAVE_CUDA
    CHECK_OK(st);
    CHECK(ns_grad_backend(g) == NS_BACKEND_CUDA);
    CHECK(ns_grad_add_param(g, 0, "all", "gl_hh", NULL) == NS_OK); /* a RANGE parameter */
#else
    CHECK(st == NS_ERR_UNSUPPORTED && g == NULL);
    CHECK_MSG(strstr(ns_last_error(), "on the GPU: this neurosolve was built without CUDA") != NULL, "%s",
              ns_last_error());
#endif
    ns_grad_destroy(g);
    ns_sim_destroy(sim);
    ns_sim_model_destroy(m);
    ns_cell_destroy(cell);
    return check_summary("test_grad_backend");
}

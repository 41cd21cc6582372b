/* Poisson spike sources (docs/networks.md, "Poisson sources"): a homogeneous
 * Poisson process of `rate` Hz on (start, stop) ms, as NEURON's NetStim with
 * noise = 1 and an unlimited number, but with its own generator: the
 * SplitMix64 stream of (seed, NS_POISSON_STREAM) (core/rng.h), one uniform
 * u in (0, 1] per interval, interval = -ln(u) / rate. The times are drawn in
 * one sequence per source, ahead of each interval of the loop (net.c's
 * ns_net_emit_trains), so that they depend on the seed only: not on the intervals,
 * the lane blocks or the thread count. */
#include <math.h>

#include "net/net_impl.h"

/* The stream of Poisson sources within a seed (other users of ns_rng take other streams). */
#define NS_POISSON_STREAM UINT64_C(0x506f6973736f6e) /* "Poisson" */

/* The next spike after time t: t + an exponential interval of mean 1000/rate ms. */
static double after(net_source *s, double t) {
    if (!(s->rate > 0.0)) return INFINITY;
    const double u = (double)((ns_rng_next(&s->rng) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
    const double next = t - log(u) * (1000.0 / s->rate);
    return next < s->stop ? next : INFINITY;
}

void ns_net_poisson_reset(net_source *s) {
    ns_rng_seed(&s->rng, s->seed, NS_POISSON_STREAM);
    s->next = after(s, s->start);
}

void ns_net_poisson_draw(net_source *s) { s->next = after(s, s->next); }

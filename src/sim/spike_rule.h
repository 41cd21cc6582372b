/* Soma spike times, one rule for the CPU and GPU loops (docs/simulation.md,
 * "Spike times"): a step from (tp, v_old) to (t, v_new) at the spike node.
 *   interpolated (default): v_old < thr <= v_new, the time where the line
 *       through the two samples crosses thr;
 *   NetCon (ns_sim_params.netcon_spikes = 1): NEURON's PreSyn check after
 *       each fixed step (netcvode.cpp, check_thresh: a spike when v > thr
 *       and the flag, v > thr at the previous check, is false), recorded at
 *       the step's end t plus teps = 1e-10 ms as NetCon.record gives it. */
#ifndef NS_CABLE_SPIKE_RULE_H
#define NS_CABLE_SPIKE_RULE_H

#ifdef __CUDACC__
#define NS_SPIKE_FN static inline __host__ __device__
#else
#define NS_SPIKE_FN static inline
#endif

#define NS_SPIKE_TEPS 1e-10 /* [ms] NEURON's teps for threshold events */

/* 1 when the step is a spike (its time in *ts), else 0. */
NS_SPIKE_FN int ns_spike_step(int netcon, double thr, double tp, double v_old, double t, double v_new,
                              double *ts) {
    if (netcon) {
        if (tp == 0.0 && v_old > thr) { /* NEURON's check at finitialize: v_init above the threshold */
            *ts = NS_SPIKE_TEPS;
            return 1;
        }
        if (!(v_old > thr) && v_new > thr) {
            *ts = t + NS_SPIKE_TEPS;
            return 1;
        }
        return 0;
    }
    if (v_old < thr && v_new >= thr) {
        *ts = tp + (t - tp) * (thr - v_old) / (v_new - v_old);
        return 1;
    }
    return 0;
}

#endif

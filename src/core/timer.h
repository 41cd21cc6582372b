/* Private: a monotonic wall clock in milliseconds. */
#ifndef NS_CORE_TIMER_H
#define NS_CORE_TIMER_H

#ifdef __cplusplus
extern "C" {
#endif

double ns_time_ms(void);

#ifdef __cplusplus
}
#endif
#endif

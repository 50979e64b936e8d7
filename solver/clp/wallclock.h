// wallclock.h declares the one CLP call that the C interface lacks.
#ifndef HUITIAN_CLP_WALLCLOCK_H
#define HUITIAN_CLP_WALLCLOCK_H
#ifdef __cplusplus
extern "C" {
#endif

// huitian_clp_set_maximum_wall_seconds sets the model's wall-clock limit,
// counted from the call; a negative value removes it.
void huitian_clp_set_maximum_wall_seconds(void *model, double seconds);

#ifdef __cplusplus
}
#endif
#endif

// Clp_setMaximumSeconds limits CLP by CPU time, and CoinCpuTime is
// getrusage(RUSAGE_SELF): the CPU time of the whole process, every Go
// thread included. A planner's budget is wall-clock time, so the limit is
// set here with ClpModel::setMaximumWallSeconds, which the C interface
// does not expose. Coin_C_defines.h shows C++ code the Clp_Simplex layout
// when CLP_EXTERN_C is defined, for exactly this purpose.
#define CLP_EXTERN_C
#include "ClpSimplex.hpp"
#include "Clp_C_Interface.h"
#include "wallclock.h"

void huitian_clp_set_maximum_wall_seconds(void *model, double seconds)
{
  static_cast<Clp_Simplex *>(model)->model_->setMaximumWallSeconds(seconds);
}
